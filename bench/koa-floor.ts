// A second baseline: what the gateway's framework costs before any gateway work. The same Koa
// set-up the gateway has (request id, error handling, one router holding every route, the JSON
// body reader) with a chat route that only forwards the parsed body to the upstream through the
// shared HTTP client and returns its JSON with two fields added. No authentication, validation,
// planning or billing. The distance from the bare proxy to this row is the framework's; from this
// row to the gateway's, the gateway's own work.
import http from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';
import { Agent, request } from 'undici';
import { requestId } from '../api/middleware/requestId.js';
import { handleErrors } from '../api/middleware/errors.js';
import { jsonBody } from '../api/middleware/body.js';

const upstream = process.argv[2];
const agent = new Agent({ keepAliveTimeout: 30_000, connections: 512 });
const app = new Koa();
app.silent = true;
app.use(requestId);
app.use(handleErrors);
const routes = new Router();
routes.post(
  '/api/v1/chat/completions',
  jsonBody({ limitBytes: 10 * 1024 * 1024, maxDepth: 64, maxValues: 250_000 }),
  async (ctx) => {
    const body = ctx.request.body as Record<string, unknown>;
    const up = await request(`${upstream}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...body, model: 'gpt-4o-mini' }),
      dispatcher: agent,
    });
    if (body.stream) {
      ctx.type = 'text/event-stream';
      ctx.body = up.body;
      return;
    }
    const json = (await up.body.json()) as Record<string, unknown>;
    ctx.body = { ...json, model: body.model, cost: 0 };
  },
);
app.use(routes.routes());
app.use(routes.allowedMethods());
const server = http.createServer(app.callback());
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (server.address() as { port: number }).port })));
