// real-runtimes.test: a Node.js server (libuv's event loop on epoll, its
// thread pool, an eventfd, a worker thread with its own V8 isolate, a child
// process on pipes, fs.watch on inotify). It writes its port to the file
// named by its first argument once it listens. Each connection first asks
// the worker for its count of questions and has the child (cat) echo a
// numbered line, then gets one line: the ticks of a 10 ms interval, the
// sum and size of a map of 100,000, the worker's count, the line echoed,
// and the files fs.watch has seen created in the directory named by the
// second argument. Between two connections only the interval runs (no
// message crosses between threads, whose wake-ups would show in an
// eventfd's count at any moment).
'use strict';
const net = require('net');
const fs = require('fs');
const { spawn } = require('child_process');
const { Worker } = require('worker_threads');

let ticks = 0, asked = 0;
const seen = [];
setInterval(() => { ticks++; }, 10);
const map = new Map();
for (let i = 0; i < 100000; i++) map.set('k' + i, i);
const worker = new Worker(
  'const { parentPort } = require("worker_threads"); let n = 0; parentPort.on("message", () => parentPort.postMessage(++n));',
  { eval: true });
const cat = spawn('cat', [], { stdio: ['pipe', 'pipe', 'inherit'] });
fs.watch(process.argv[3], (ev, name) => { if (ev === 'rename' && name && !seen.includes(name)) seen.push(name); });
const srv = net.createServer((s) => {
  worker.once('message', (count) => {
    cat.stdout.once('data', (b) => {
      let sum = 0;
      for (const v of map.values()) sum += v;
      s.end(`ticks=${ticks} sum=${sum} size=${map.size} worker=${count} echoed=${b.toString().trim()} seen=${seen.join(',') || '-'}\n`);
    });
    cat.stdin.write('line' + (++asked) + '\n');
  });
  worker.postMessage(0);
});
srv.listen(0, '127.0.0.1', () => {
  fs.writeFileSync(process.argv[2] + '.tmp', String(srv.address().port));
  fs.renameSync(process.argv[2] + '.tmp', process.argv[2]);
});
