'use strict';
// A tiny "stock" service whose one HTTP dependency (an inventory service) is
// guarded by the real `opossum` circuit breaker. firedrill's tests drive it
// black-box: they start it, point DEPENDENCY_URL at a fault proxy and watch
// its answers and the breaker's state changes.
//
// Environment (all optional except DEPENDENCY_URL):
//   PORT                        listen on 127.0.0.1:PORT; 0 or unset picks a free port.
//                               Once listening, prints exactly one stdout line:
//                               `listening on 127.0.0.1:<port>`
//   DEPENDENCY_URL              base URL of the dependency, e.g. http://127.0.0.1:19001
//   CALL_TIMEOUT_MS             whole-call deadline of a dependency call (default 1000)
//   ERROR_THRESHOLD_PERCENTAGE  opossum errorThresholdPercentage (default 50)
//   VOLUME_THRESHOLD            opossum volumeThreshold (default 5)
//   RESET_TIMEOUT_MS            opossum resetTimeout (default 2000)
//   ROLLING_COUNT_TIMEOUT_MS    opossum rollingCountTimeout (default 10000)
//   ROLLING_COUNT_BUCKETS       opossum rollingCountBuckets (default 10)
//   PROPAGATE                   1 (default): copy `x-request-id` and `traceparent` from
//                               the incoming request to the dependency call; 0: do not
//   CLOSE_LATE_MS               close a timed-out dependency call's socket this many ms
//                               after giving up on it (default 0: at once), as an app
//                               whose own client outlives opossum's timeout does
//   NO_BREAKER=1                call the dependency directly, no breaker (failures
//                               still get the fallback answer; no events are written)
//   EVENTS_FILE                 append one JSON line per breaker state change, at the
//                               moment opossum emits it:
//                               {"at_ms":<epoch ms>,"from":"closed|open|half_open",
//                                "to":"closed|open|half_open","library":"opossum"}
//                               (the file is created, empty, at start-up)
//
// Routes:
//   GET /stock/<sku>  -> GET {DEPENDENCY_URL}/inventory/<sku> through the breaker.
//                        A status >= 500, a timeout or a connection error is a failure.
//                        Success: 200 with the dependency's body (and content-type).
//                        Failure or open breaker: 200 {"items":[],"fallback":true}
//                        with header `x-fallback: cached`.
//   GET /health       -> 200 `ok` (never touches the breaker)
//   GET /metrics      -> opossum-prometheus's Prometheus text: the counter
//                        `circuit{name="inventory",event=...}` per breaker event
//                        (404 with NO_BREAKER=1)
//   anything else     -> 404 (405 for a non-GET method on a known route)
//
// SIGTERM / SIGINT: stop listening, close connections, exit 0.

const fs = require('fs');
const http = require('http');
const CircuitBreaker = require('opossum');
const PrometheusMetrics = require('opossum-prometheus');
const { Registry } = require('prom-client');

function fail (message) {
  process.stderr.write(`opossum service: ${message}\n`);
  process.exit(2);
}

function numberEnv (name, fallback, { integer = false } = {}) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || (integer && !Number.isInteger(value))) {
    fail(`${name}=${raw}: expected a non-negative ${integer ? 'integer' : 'number'}`);
  }
  return value;
}

const PORT = numberEnv('PORT', 0, { integer: true });
const CALL_TIMEOUT_MS = numberEnv('CALL_TIMEOUT_MS', 1000, { integer: true });
const NO_BREAKER = process.env.NO_BREAKER === '1';
const CLOSE_LATE_MS = numberEnv('CLOSE_LATE_MS', 0, { integer: true });
const PROPAGATE = process.env.PROPAGATE === undefined || process.env.PROPAGATE === '' ? '1' : process.env.PROPAGATE;
if (PROPAGATE !== '0' && PROPAGATE !== '1') fail(`PROPAGATE=${PROPAGATE}: expected 0 or 1`);
// The correlation headers copied onto the dependency call (PROPAGATE=1).
const PROPAGATED = ['x-request-id', 'traceparent'];
const EVENTS_FILE = process.env.EVENTS_FILE || '';
const DEPENDENCY_URL = (process.env.DEPENDENCY_URL || '').replace(/\/+$/, '');
if (!DEPENDENCY_URL) fail('DEPENDENCY_URL is required (e.g. http://127.0.0.1:19001)');
try {
  if (new URL(DEPENDENCY_URL).protocol !== 'http:') fail(`DEPENDENCY_URL=${DEPENDENCY_URL}: only http:// is supported`);
} catch (e) {
  fail(`DEPENDENCY_URL=${DEPENDENCY_URL}: ${e.message}`);
}

const FALLBACK_BODY = JSON.stringify({ items: [], fallback: true });

// One dependency call: resolves {status, contentType, body} for any status
// below 500; rejects on a status >= 500, a connection error, or when the
// whole exchange (connect, headers, body) exceeds CALL_TIMEOUT_MS. `headers`:
// the incoming request's, whose correlation ids go along (PROPAGATE=1).
function fetchInventory (sku, headers) {
  const along = {};
  if (PROPAGATE === '1') {
    for (const name of PROPAGATED) {
      if (headers && headers[name] !== undefined) along[name] = headers[name];
    }
  }
  return new Promise((resolve, reject) => {
    let settled = false;
    let timer = null;
    const settle = (fn, value) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn(value);
    };
    const req = http.get(`${DEPENDENCY_URL}/inventory/${sku}`, { headers: along }, res => {
      const chunks = [];
      res.on('data', chunk => chunks.push(chunk));
      res.on('error', err => settle(reject, err));
      // `close` without a complete `end` first: the connection was cut mid-response.
      res.on('close', () => settle(reject, Object.assign(new Error('truncated response'), { code: 'ECONNRESET' })));
      res.on('end', () => {
        if (!res.complete) {
          settle(reject, Object.assign(new Error('truncated response'), { code: 'ECONNRESET' }));
        } else if (res.statusCode >= 500) {
          settle(reject, Object.assign(new Error(`dependency answered ${res.statusCode}`), { code: 'EDEPENDENCY' }));
        } else {
          settle(resolve, {
            status: res.statusCode,
            contentType: res.headers['content-type'] || 'application/json',
            body: Buffer.concat(chunks)
          });
        }
      });
    });
    req.on('error', err => settle(reject, err));
    timer = setTimeout(() => {
      settle(reject, Object.assign(new Error(`timed out after ${CALL_TIMEOUT_MS}ms`), { code: 'ETIMEDOUT' }));
      if (CLOSE_LATE_MS > 0) setTimeout(() => req.destroy(), CLOSE_LATE_MS);
      else req.destroy();
    }, CALL_TIMEOUT_MS);
  });
}

// Created (empty) at start-up so a reader never has to tell "no file" from "no events".
const eventsFd = EVENTS_FILE ? fs.openSync(EVENTS_FILE, 'a') : null;

let breaker = null;
let metrics = null;
let call = fetchInventory;
if (!NO_BREAKER) {
  breaker = new CircuitBreaker(fetchInventory, {
    name: 'inventory',
    timeout: CALL_TIMEOUT_MS,
    errorThresholdPercentage: numberEnv('ERROR_THRESHOLD_PERCENTAGE', 50),
    volumeThreshold: numberEnv('VOLUME_THRESHOLD', 5, { integer: true }),
    resetTimeout: numberEnv('RESET_TIMEOUT_MS', 2000, { integer: true }),
    rollingCountTimeout: numberEnv('ROLLING_COUNT_TIMEOUT_MS', 10000, { integer: true }),
    rollingCountBuckets: numberEnv('ROLLING_COUNT_BUCKETS', 10, { integer: true })
  });
  // opossum calls the fallback both for a failed call and for a call the open
  // (or half-open, trial already running) breaker rejected without calling
  // the dependency.
  breaker.fallback(() => ({ fallback: true }));

  // opossum emits `open`, `halfOpen` and `close` synchronously as its state
  // changes; `from` is the state we last saw it report.
  let state = 'closed';
  const record = to => {
    const line = JSON.stringify({ at_ms: Date.now(), from: state, to, library: 'opossum' });
    state = to;
    if (eventsFd !== null) fs.writeSync(eventsFd, line + '\n');
  };
  breaker.on('open', () => record('open'));
  breaker.on('halfOpen', () => record('half_open'));
  breaker.on('close', () => record('closed'));
  // Counts every event that has a listener when the breaker is added: the
  // three above among them. Its own registry: no default process metrics.
  metrics = new PrometheusMetrics({ circuits: [breaker], registry: new Registry() });
  call = (sku, headers) => breaker.fire(sku, headers);
}

function send (res, status, headers, body) {
  res.writeHead(status, { 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

function sendFallback (res) {
  send(res, 200, { 'content-type': 'application/json', 'x-fallback': 'cached' }, FALLBACK_BODY);
}

const server = http.createServer((req, res) => {
  const path = req.url.split('?', 1)[0];
  const stock = /^\/stock\/([^/]+)$/.exec(path);
  const known = path === '/health' || (path === '/metrics' && metrics);
  if (!known && !stock) {
    return send(res, 404, { 'content-type': 'text/plain' }, 'not found');
  }
  if (req.method !== 'GET') {
    return send(res, 405, { 'content-type': 'text/plain', allow: 'GET' }, 'method not allowed');
  }
  if (path === '/metrics') {
    return send(res, 200, { 'content-type': 'text/plain; version=0.0.4' }, metrics.metrics);
  }
  if (!stock) return send(res, 200, { 'content-type': 'text/plain' }, 'ok');

  call(stock[1], req.headers).then(
    result => {
      if (result.fallback) return sendFallback(res);
      send(res, 200, { 'content-type': result.contentType }, result.body);
    },
    // Only reached with NO_BREAKER=1 (with a breaker, the fallback resolves).
    () => sendFallback(res)
  ).catch(err => {
    process.stderr.write(`opossum service: ${err.stack || err}\n`);
    if (!res.headersSent) sendFallback(res);
  });
});

server.listen(PORT, '127.0.0.1', () => {
  process.stdout.write(`listening on 127.0.0.1:${server.address().port}\n`);
});

function stop () {
  if (breaker) breaker.shutdown();
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
