// Constant-arrival-rate load on the service under test, for
// `load: external` drills (see README.md beside this file).
import http from 'k6/http';

export const options = {
  scenarios: {
    stock: {
      executor: 'constant-arrival-rate',
      rate: 50,
      timeUnit: '1s',
      duration: '60s',
      preAllocatedVUs: 50,
    },
  },
};

const target = __ENV.SERVICE_URL || 'http://127.0.0.1:8080';

export default function () {
  http.get(`${target}/stock/sku-1`, { timeout: '5s' });
}
