%% real-daemons.test: an Erlang node (BEAM's schedulers and their threads,
%% its child erl_child_setup, epoll, pipes) with an ETS table of 100,000
%% entries, a process that counts every 10 ms, and a TCP listener; each
%% connection gets "ticks=N v=V size=S". The port goes to the file named by
%% the argument.
-module(erl_srv).
-export([start/1]).

start([PortFile]) ->
    T = ets:new(t, [named_table, public]),
    [ets:insert(T, {I, I * I}) || I <- lists:seq(1, 100000)],
    {ok, L} = gen_tcp:listen(0, [binary, {ip, {127, 0, 0, 1}}, {active, false}, {reuseaddr, true}]),
    {ok, P} = inet:port(L),
    register(ticker, spawn(fun() -> tick(0) end)),
    Tmp = atom_to_list(PortFile) ++ ".tmp",
    ok = file:write_file(Tmp, integer_to_list(P)),
    ok = file:rename(Tmp, atom_to_list(PortFile)),
    serve(L).

tick(N) ->
    receive
        {get, From} -> From ! {ticks, N}, tick(N)
    after 10 -> tick(N + 1)
    end.

serve(L) ->
    {ok, C} = gen_tcp:accept(L),
    ticker ! {get, self()},
    N = receive {ticks, X} -> X end,
    [{_, V}] = ets:lookup(t, 77777),
    ok = gen_tcp:send(C, io_lib:format("ticks=~p v=~p size=~p~n", [N, V, ets:info(t, size)])),
    gen_tcp:close(C),
    serve(L).
