// real-runtimes.test: an OpenJDK server (the JVM's own threads: compiler,
// garbage collector, signal dispatcher; its perf data file mapped shared
// in /tmp/hsperfdata_USER; futex waits with timeouts). It writes its port
// to the file named by its argument once it listens; each connection gets
// one line: the ticks of a task scheduled every 10 ms, the sum and size of
// a map of 100,000, the items a worker thread took from a queue so far
// (one put every 20 ms by another task), and the connections so far.
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

public class JavaSrv {
    public static void main(String[] args) throws Exception {
        AtomicLong ticks = new AtomicLong(), taken = new AtomicLong(), conns = new AtomicLong();
        Map<String, Long> map = new ConcurrentHashMap<>();
        for (long i = 0; i < 100000; i++)
            map.put("k" + i, i);
        BlockingQueue<Long> queue = new LinkedBlockingQueue<>();
        ScheduledExecutorService ex = Executors.newScheduledThreadPool(2);
        ex.scheduleAtFixedRate(ticks::incrementAndGet, 0, 10, TimeUnit.MILLISECONDS);
        ex.scheduleAtFixedRate(() -> queue.add(1L), 0, 20, TimeUnit.MILLISECONDS);
        Thread worker = new Thread(() -> {
            try {
                while (true) {
                    queue.take();
                    taken.incrementAndGet();
                }
            } catch (InterruptedException e) {
                return;
            }
        }, "worker");
        worker.start();
        ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Path port = Path.of(args[0]), tmp = Path.of(args[0] + ".tmp");
        Files.writeString(tmp, Integer.toString(ss.getLocalPort()));
        Files.move(tmp, port, StandardCopyOption.ATOMIC_MOVE);
        while (true) {
            try (Socket s = ss.accept()) {
                long sum = 0;
                for (long v : map.values())
                    sum += v;
                new PrintWriter(s.getOutputStream(), true).println("ticks=" + ticks.get() + " sum=" + sum
                        + " size=" + map.size() + " taken=" + taken.get() + " conns=" + conns.incrementAndGet());
            }
        }
    }
}
