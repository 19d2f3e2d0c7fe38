// The baseline: a bare pass-through proxy in front of the same upstream, with the same pooled
// HTTP client the gateway uses, and nothing else (no auth, no parsing, no billing).
import http from 'node:http';
import { Agent, request } from 'undici';

const upstream = process.argv[2];
const agent = new Agent({ keepAliveTimeout: 30_000, connections: 512 });
const server = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  try {
    const up = await request(`${upstream}${req.url!.replace(/^\/api/, '')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.concat(chunks),
      dispatcher: agent,
    });
    res.writeHead(up.statusCode, { 'content-type': String(up.headers['content-type'] ?? 'application/json') });
    for await (const c of up.body) res.write(c);
    res.end();
  } catch (err) {
    res.writeHead(502).end(String(err));
  }
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (server.address() as { port: number }).port })));
