// Drives the real opossum (node_modules, installed by
// ci/install-test-clients.sh) through call sequences on a fake clock, for
// tests/opossum_fidelity.rs: the same sequences go through firedrill's
// `opossum` model, and the states must agree after every event.
//
// stdin: a JSON array of cases {options, steps}; each step is
// {t: ms, ev: "acquire" | "finish" | "timer", id, end: "success" |
// "failure" | "ignored"} (`id`: the admission number of the call to end).
// stdout: a JSON array, per case, of [state, admitted] after each step
// (state "closed" | "open" | "half_open"; admitted true/false for an
// acquire, null otherwise).
//
// The clock: setTimeout, setInterval, their clear functions and Date.now
// are replaced before opossum is loaded. Moving to time t runs every timer
// due by then in due order (creation order within one instant), each at
// its own due time, letting promise callbacks settle after each; an
// interval is rescheduled exactly one period later. So timers at an
// instant run before the event at that instant.
'use strict';

let now = 0;
let seq = 0;
let timers = new Map();

function schedule (fn, ms, period) {
  const id = ++seq;
  const delay = Math.max(1, Number(ms) || 0);
  timers.set(id, { fn, due: now + delay, period: period ? delay : 0, seq: id });
  return { id, unref () { return this; }, ref () { return this; }, [Symbol.toPrimitive] () { return id; } };
}
function clear (handle) {
  if (handle) timers.delete(typeof handle === 'object' ? handle.id : handle);
}
global.setTimeout = (fn, ms) => schedule(fn, ms, false);
global.setInterval = (fn, ms) => schedule(fn, ms, true);
global.clearTimeout = clear;
global.clearInterval = clear;
Date.now = () => now;

const settle = () => new Promise(resolve => setImmediate(resolve));

async function advance (to) {
  for (;;) {
    let next = null;
    for (const [id, t] of timers) {
      if (t.due <= to && (next === null || t.due < next[1].due ||
          (t.due === next[1].due && t.seq < next[1].seq))) {
        next = [id, t];
      }
    }
    if (next === null) break;
    const [id, t] = next;
    now = t.due;
    if (t.period) {
      t.due += t.period;
      t.seq = ++seq;
    } else {
      timers.delete(id);
    }
    t.fn();
    await settle();
  }
  now = to;
}

const CircuitBreaker = require('./node_modules/opossum');

function state (breaker) {
  if (breaker.opened) return 'open';
  if (breaker.halfOpen) return 'half_open';
  return 'closed';
}

async function run (c) {
  now = 0;
  timers = new Map();
  const calls = new Map();
  let admissions = 0;
  let admittedNow = false;
  const breaker = new CircuitBreaker(() => new Promise((resolve, reject) => {
    admittedNow = true;
    calls.set(admissions++, { resolve, reject });
  }), { ...c.options, timeout: false, errorFilter: e => e.ignored === true });
  breaker.on('error', () => {});
  const out = [];
  for (const s of c.steps) {
    await advance(s.t);
    let admitted = null;
    if (s.ev === 'acquire') {
      admittedNow = false;
      breaker.fire().catch(() => {});
      admitted = admittedNow;
    } else if (s.ev === 'finish') {
      const call = calls.get(s.id);
      calls.delete(s.id);
      if (s.end === 'success') {
        call.resolve('ok');
      } else {
        const error = new Error(s.end);
        error.ignored = s.end === 'ignored';
        call.reject(error);
      }
    }
    await settle();
    out.push([state(breaker), admitted]);
  }
  breaker.shutdown();
  return out;
}

async function main () {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const results = [];
  for (const c of JSON.parse(input)) results.push(await run(c));
  process.stdout.write(JSON.stringify(results));
}

main().catch(e => {
  console.error(e);
  process.exit(1);
});
