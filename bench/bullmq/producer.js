// The producer of bench/cluster_failover.py --bullmq: adds deliveries to queue "deliveries"
// with Queue.addBulk, BATCH jobs a call, one call after another (as the relay-egress intake is
// posted batches), each job removed once completed.
// Usage: node producer.js REDIS_PORT BATCH JOBS_FILE   (JOBS_FILE: one {"url","payload"} a line)
// Reads the jobs and connects, prints "ready", waits for a line on stdin, adds them all, prints
// "added <seconds the adds took>", and exits at the end of stdin (so its CPU time can be read
// until then).
'use strict';
const fs = require('node:fs');
const readline = require('node:readline');
const { Queue } = require('bullmq');

async function main() {
  const [redisPort, batch, jobsFile] = [Number(process.argv[2]), Number(process.argv[3]),
                                        process.argv[4]];
  const jobs = fs.readFileSync(jobsFile, 'utf8').split('\n').filter((l) => l)
    .map((l) => ({ name: 'delivery', data: JSON.parse(l),
                   opts: { removeOnComplete: true, attempts: 5,
                           backoff: { type: 'fixed', delay: 100 } } }));
  const queue = new Queue('deliveries', { connection: { host: '127.0.0.1', port: redisPort } });
  await queue.waitUntilReady();
  console.log('ready');
  const lines = readline.createInterface({ input: process.stdin });
  const closed = new Promise((resolve) => lines.once('close', resolve));
  await new Promise((resolve) => lines.once('line', resolve));
  const started = process.hrtime.bigint();
  for (let i = 0; i < jobs.length; i += batch) {
    await queue.addBulk(jobs.slice(i, i + batch));
  }
  console.log('added ' + (Number(process.hrtime.bigint() - started) / 1e9).toFixed(3));
  await queue.close();
  await closed;
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
