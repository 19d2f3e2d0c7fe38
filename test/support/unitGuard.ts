// Loaded first by `npm run test:unit` (.mocharc.unit.cjs): the unit tier has no database, no Temporal
// and no network, and a test that reaches for one fails at once, naming what it tried, instead of
// quietly passing on a machine that happens to have PostgreSQL. The database URL points at a port
// nothing may open, and every TCP or IPC connection this process starts is refused.
import net from 'node:net';

process.env.DATABASE_URL = 'postgresql://unit-tests-have-no-database@127.0.0.1:1/none';
process.env.SWITCHYARD_UNIT_GUARD = '1';
delete process.env.TEMPORAL_ADDRESS;

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  const [first] = args;
  const where =
    typeof first === 'object' && first !== null
      ? JSON.stringify(first, (_k, v) => (typeof v === 'function' ? undefined : v))
      : String(first);
  throw new Error(`a unit test opened a connection (${where}): it belongs in the integration tier (test/*.test.ts)`);
} as typeof connect;
