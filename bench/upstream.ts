// A minimal OpenAI-protocol upstream for benchmarks, run as its own process so its work is not
// counted against the gateway's event loop: answers /v1/chat/completions at once, JSON or SSE
// (a role chunk, 8 content chunks, a usage chunk, [DONE]). The answer is fixed on purpose: the
// benchmark measures what sits in front of it.
import http from 'node:http';

const words = ['Switch', 'yard', ' routes', ' this', ' request', ' to', ' an', ' upstream.'];
const usage = { prompt_tokens: 12, completion_tokens: words.length, total_tokens: 12 + words.length };

const server = http.createServer((req, res) => {
  let raw = '';
  req.on('data', (c) => (raw += c));
  req.on('end', () => {
    const body = JSON.parse(raw || '{}');
    const base = { id: 'chatcmpl-bench', created: Math.floor(Date.now() / 1000), model: body.model };
    if (!body.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ...base,
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: words.join('') }, finish_reason: 'stop' }],
          usage,
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const chunk = (delta: object, finish: string | null = null, extra = {}) =>
      `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
    let out = chunk({ role: 'assistant', content: '' });
    for (const w of words) out += chunk({ content: w });
    out += chunk({}, 'stop');
    out += `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n`;
    out += 'data: [DONE]\n\n';
    res.end(out);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  console.log(JSON.stringify({ port: (server.address() as { port: number }).port }));
});
