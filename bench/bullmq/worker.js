// One BullMQ worker process of bench/cluster_failover.py --bullmq: takes the jobs of queue
// "deliveries" and POSTs each job's payload (JSON) to its URL over keep-alive HTTP/1.1; a
// non-2xx answer or a transport error fails the attempt (BullMQ retries it).
// Usage: node worker.js REDIS_PORT CONCURRENCY
// Prints "ready" once the worker is connected; stops on SIGTERM.
'use strict';
const http = require('node:http');
const { Worker } = require('bullmq');

const redisPort = Number(process.argv[2]);
const concurrency = Number(process.argv[3] || 64);
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });

function post(url, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      agent,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
    }, (res) => {
      res.resume();  // read the answer's body so the connection can be reused
      res.on('end', () => {
        if (res.statusCode >= 200 && res.statusCode < 300) {
          resolve();
        } else {
          reject(new Error('HTTP ' + res.statusCode));
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const worker = new Worker('deliveries', (job) => post(job.data.url, JSON.stringify(job.data.payload)), {
  connection: { host: '127.0.0.1', port: redisPort, maxRetriesPerRequest: null },
  concurrency,
});
worker.on('error', (e) => console.error('worker error:', e.message));

worker.waitUntilReady().then(() => console.log('ready'));

process.on('SIGTERM', () => {
  worker.close().finally(() => process.exit(0));
});
