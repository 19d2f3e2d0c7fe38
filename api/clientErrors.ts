// Answers Node's HTTP layer writes itself, before any request reaches Koa: a malformed request
// line or header (400), headers past the size limit (431), a request whose headers took too long
// (408). Node would send a bare status line; these carry the JSON envelope and an X-Request-ID
// like every other answer, so a client (and a fuzzer) sees one shape of error everywhere.
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { RequestError } from '../activities/core/errors.js';
import { renderError } from '../activities/surfaces/errors.js';
import { newRequestId } from './middleware/requestId.js';

const ANSWERS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [
    431,
    'request_header_fields_too_large',
    'The request headers are larger than this server accepts. Send fewer or shorter headers.',
  ],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request_timeout', 'The request headers did not arrive in time.'],
  ERR_HTTP_HEADERS_TIMEOUT: [408, 'request_timeout', 'The request headers did not arrive in time.'],
};
const MALFORMED: [number, string, string] = [
  400,
  'malformed_request',
  'The request is not well-formed HTTP/1.1 (its request line or a header could not be parsed).',
];

function answer(err: NodeJS.ErrnoException, socket: Duplex): void {
  // what Node itself checks: nothing can be written to a socket that is gone, or mid-answer
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
    socket.destroy(err);
    return;
  }
  const [status, code, message] = ANSWERS[err.code ?? ''] ?? MALFORMED;
  const body = JSON.stringify(renderError(new RequestError(status, code, message), 'openai'));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-ID: ${newRequestId()}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

/** Give `server`'s own refusals the gateway's envelope. */
export function answerClientErrors(server: Server): Server {
  server.on('clientError', answer);
  return server;
}
