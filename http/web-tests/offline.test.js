// The page without its server: when the first requests count as "unreachable" (and
// the page retries) rather than refused (and the page asks for a token), and how long
// it waits between tries.
import test from 'node:test';
import assert from 'node:assert/strict';
import './fake-dom.js';
import { retryDelay, unreachable, MAX_RETRY_MS } from '../web/offline.js';

test('tries again after 1, 2, 4 and 8 s, then every 10 s', () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5, 50, 5000].map(retryDelay), [1000, 2000, 4000, 8000, 10000, 10000, 10000, 10000]);
  assert.equal(MAX_RETRY_MS, 10000);
  assert.equal(retryDelay(-1), 1000, 'a negative count is the first try');
});

test('no answer, or none in time, is unreachable; an answer is not', () => {
  // What conn.js throws: a failed fetch, a request that timed out.
  assert.equal(unreachable({ code: 'DISCONNECTED', message: 'the server could not be reached' }), true);
  assert.equal(unreachable({ code: 'TIMEOUT' }), true);
  // The server answered: a refused token, a server error, a proxy's 502.
  assert.equal(unreachable({ status: 401, code: 'UNAUTHORIZED' }), false);
  assert.equal(unreachable({ status: 500 }), false);
  assert.equal(unreachable({ status: 502, code: 'DISCONNECTED' }), false);
  // Anything else is a bug to show, not an outage to wait out.
  assert.equal(unreachable(new TypeError('x is undefined')), false);
  assert.equal(unreachable(null), false);
  assert.equal(unreachable(undefined), false);
});
