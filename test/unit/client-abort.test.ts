import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Context } from 'koa';
import { clientAbortSignal } from '../../api/clientAbort.js';

/** A Koa context on a stand-in connection: all clientAbortSignal reads is the socket. */
const onSocket = (socket: EventEmitter & { destroyed?: boolean }) => ({ req: { socket } }) as unknown as Context;

describe('the client-abort signal (one per connection)', () => {
  it('is shared by the requests of one connection and fires when the connection closes', () => {
    const socket = new EventEmitter();
    const a = clientAbortSignal(onSocket(socket));
    assert.equal(clientAbortSignal(onSocket(socket)), a, 'the next request on the connection reuses it');
    assert.notEqual(clientAbortSignal(onSocket(new EventEmitter())), a, 'another connection has its own');
    socket.emit('close');
    assert.equal(a.aborted, true);
    assert.match(String((a.reason as Error).message), /client disconnected/);
  });

  it('is replaced when a request left a listener on it, so forgotten listeners cannot pile up', () => {
    const socket = new EventEmitter();
    const a = clientAbortSignal(onSocket(socket));
    const forgotten = () => {};
    a.addEventListener('abort', forgotten);
    const b = clientAbortSignal(onSocket(socket));
    assert.notEqual(b, a);
    assert.equal(clientAbortSignal(onSocket(socket)), b);
    socket.emit('close');
    assert.equal(b.aborted, true);
    assert.equal(a.aborted, true, 'the old one still fires for whoever holds it');
  });

  it('is aborted at once for a connection that is already gone', () => {
    const socket = Object.assign(new EventEmitter(), { destroyed: true });
    assert.equal(clientAbortSignal(onSocket(socket)).aborted, true);
  });
});
