// The operator CLI: `npm run ops -- <command>`. Accounts, balances (every change a ledger entry
// with a reason), keys, the catalog. Uses DATABASE_URL, or the embedded database when unset
// (stop `npm start` first in that case: the embedded database serves one process at a time).
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { db } from '../activities/db.js';
import { createAccount, findAccount } from '../activities/accounts/accounts.js';
import { createKey, revokeKey, setAccountRedaction, setKeyRedaction } from '../activities/accounts/keys.js';
import { balances, credit, debit, InsufficientFunds, recentEntries } from '../activities/ledger/ledger.js';
import { type Currency, formatAmount, parseAmount } from '../activities/core/money.js';
import { openDatabase, prepareCatalog } from './boot.js';
import {
  createUser,
  defaultDisplayName,
  EmailTaken,
  findUserByEmail,
  listUsers,
  looksLikeEmail,
  setPassword,
} from '../activities/accounts/users.js';
import { revokeUserSessions } from '../activities/accounts/sessions.js';
import { PASSWORD_MAX, PASSWORD_MIN } from '../activities/accounts/passwords.js';

const HELP = `Switchyard operator CLI

  npm run ops -- accounts create <name> [--balance <usd>]
  npm run ops -- accounts list
  npm run ops -- accounts show <account> [--entries <n>]
  npm run ops -- accounts redaction <account> inherit|always|never   (PII redaction default)
  npm run ops -- credit <account> <amount> --reason <text> [--currency USD|XNO] [--idempotency-key <k>]
  npm run ops -- debit  <account> <amount> --reason <text> [--currency USD|XNO] [--idempotency-key <k>]
  npm run ops -- keys create <account> [--name <n>] [--rpd <n>] [--usd-per-day <usd>] [--allow <p,p>]
                                     [--deny <p,p>] [--zdr-only] [--billing-mode auto|paygo|subscription_only]
                                     [--redaction inherit|always|never] [--expires <ISO date>]
  npm run ops -- keys list <account>
  npm run ops -- keys revoke <key id | display prefix>
  npm run ops -- keys redaction <key id | display prefix> inherit|always|never   (PII redaction default)
  npm run ops -- users create <email> [--name <display name>] [--password <p>] [--balance <usd>]
  npm run ops -- users list
  npm run ops -- users password <email> --password <p>
  npm run ops -- users sign-out <email>            (ends every session of the user)
  npm run ops -- catalog sync

<account> is an account id or its (unique) name; a user's personal account is named by their
e-mail address. Amounts are decimal text, e.g. 12.50. Users made here are made whatever
SWITCHYARD_SIGNUP says; without --password they sign in by e-mail code.`;

const { values: opt, positionals: args } = parseArgs({
  allowPositionals: true,
  options: {
    balance: { type: 'string' },
    entries: { type: 'string' },
    reason: { type: 'string' },
    currency: { type: 'string' },
    'idempotency-key': { type: 'string' },
    name: { type: 'string' },
    rpd: { type: 'string' },
    'usd-per-day': { type: 'string' },
    allow: { type: 'string' },
    deny: { type: 'string' },
    'zdr-only': { type: 'boolean' },
    'billing-mode': { type: 'string' },
    redaction: { type: 'string' },
    expires: { type: 'string' },
    password: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});

class UsageError extends Error {}

function redactionMode(value: string | undefined): 'inherit' | 'always' | 'never' | undefined {
  if (value === undefined) return undefined;
  if (value === 'inherit' || value === 'always' || value === 'never') return value;
  throw new UsageError('PII redaction is inherit, always or never');
}

async function account(idOrName: string | undefined) {
  if (!idOrName) throw new UsageError('name the account (id or name)');
  const a = await findAccount(idOrName);
  if (!a) throw new UsageError(`no account "${idOrName}"`);
  return a;
}

function currency(): Currency {
  const c = (opt.currency ?? 'USD').toUpperCase();
  if (c !== 'USD' && c !== 'XNO') throw new UsageError('--currency is USD or XNO');
  return c;
}

const list = (s?: string) =>
  s
    ? s
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean)
    : [];

function password(): string | undefined {
  const p = opt.password;
  if (p !== undefined && (p.length < PASSWORD_MIN || p.length > PASSWORD_MAX))
    throw new UsageError(`--password must be ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`);
  return p;
}

async function user(email: string | undefined) {
  if (!email) throw new UsageError('name the user by e-mail address');
  const u = await findUserByEmail(email);
  if (!u) throw new UsageError(`no user "${email}"`);
  return u;
}

async function show(accountId: string, entries: number) {
  const b = (await balances(accountId))!;
  for (const c of ['USD', 'XNO'] as const) {
    console.log(
      `  ${c}  balance ${formatAmount(b[c].amount, c)}  held ${formatAmount(b[c].held, c)}  available ${formatAmount(b[c].available, c)}`,
    );
  }
  const rows = await recentEntries(accountId, entries);
  if (rows.length) console.log(`  recent entries (newest first):`);
  for (const e of rows) {
    console.log(
      `   #${e.id} ${e.createdAt.toISOString()} ${e.kind.padEnd(6)} ${formatAmount(e.amount, e.currency).padStart(16)} ${e.currency}  → ${formatAmount(e.balanceAfter, e.currency)}  ${e.reason ?? ''}`,
    );
  }
}

async function run(): Promise<void> {
  const [group, verb, ...rest] = args;
  if (opt.help || !group) return console.log(HELP);
  const cmd = ['credit', 'debit'].includes(group) ? group : `${group} ${verb ?? ''}`.trim();
  if (group === 'keys') return keysCommand(cmd, rest);
  if (group === 'users') return usersCommand(cmd, rest);
  switch (cmd) {
    case 'accounts create': {
      if (!rest[0]) throw new UsageError('accounts create <name>');
      const a = await createAccount(rest[0]);
      if (opt.balance)
        await credit({
          accountId: a.id,
          currency: 'USD',
          amount: parseAmount(opt.balance, 'USD'),
          reason: 'opening balance',
          idempotencyKey: `opening:${a.id}`,
        });
      console.log(`account ${a.id} "${a.name}" created`);
      return show(a.id, 5);
    }
    case 'accounts list': {
      const all = await db().prisma.account.findMany({ orderBy: { createdAt: 'asc' }, include: { balances: true } });
      for (const a of all) {
        const usd = a.balances.find((b) => b.currency === 'USD');
        console.log(
          `${a.id}  ${a.name.padEnd(20)} ${a.status.padEnd(9)} USD ${formatAmount(BigInt(usd?.amount.toString() ?? 0), 'USD')}`,
        );
      }
      return;
    }
    case 'accounts show': {
      const a = await account(rest[0]);
      console.log(`account ${a.id} "${a.name}" (${a.status})`);
      return show(a.id, Number(opt.entries ?? 20));
    }
    case 'accounts redaction': {
      const a = await account(rest[0]);
      const mode = redactionMode(rest[1]);
      if (!mode) throw new UsageError('accounts redaction <account> inherit|always|never');
      await setAccountRedaction(a.id, mode);
      console.log(`account "${a.name}": PII redaction ${mode} (keys that inherit follow it)`);
      return;
    }
    case 'credit':
    case 'debit': {
      const [who, amountText] = [verb, rest[0]];
      const a = await account(who);
      if (!amountText) throw new UsageError(`${cmd} <account> <amount> --reason <text>`);
      if (!opt.reason) throw new UsageError('--reason is required: every balance change says why');
      const c = currency();
      const amount = parseAmount(amountText, c);
      const input = {
        accountId: a.id,
        currency: c,
        amount,
        reason: opt.reason,
        idempotencyKey: opt['idempotency-key'] ?? `ops:${randomUUID()}`,
      };
      const e = cmd === 'credit' ? await credit(input) : await debit(input);
      console.log(`entry #${e.id}: ${formatAmount(e.amount, c)} ${c}, balance now ${formatAmount(e.balanceAfter, c)}`);
      return;
    }
    case 'catalog sync':
      return prepareCatalog((m) => console.log(m));
    default:
      throw new UsageError(`unknown command "${args.join(' ')}"\n\n${HELP}`);
  }
}

/** The `keys` commands. */
async function keysCommand(cmd: string, rest: string[]): Promise<void> {
  switch (cmd) {
    case 'keys create': {
      const a = await account(rest[0]);
      const mode = opt['billing-mode'];
      if (mode && !['auto', 'paygo', 'subscription_only'].includes(mode))
        throw new UsageError('--billing-mode is auto, paygo or subscription_only');
      const expires = opt.expires ? new Date(opt.expires) : null;
      if (expires && Number.isNaN(expires.getTime())) throw new UsageError('--expires takes an ISO date');
      const rpd = opt.rpd === undefined ? null : Number(opt.rpd);
      if (rpd !== null && (!Number.isInteger(rpd) || rpd < 0)) throw new UsageError('--rpd takes a whole number');
      const { key, record } = await createKey(a.id, {
        name: opt.name,
        dailyRequestLimit: rpd,
        dailyUsdLimit: opt['usd-per-day'] ? parseAmount(opt['usd-per-day'], 'USD') : null,
        providerAllow: list(opt.allow),
        providerDeny: list(opt.deny),
        zdrOnly: opt['zdr-only'] ?? false,
        billingMode: mode as 'auto' | 'paygo' | 'subscription_only' | undefined,
        redaction: opt.redaction === undefined ? undefined : redactionMode(opt.redaction),
        expiresAt: expires,
      });
      console.log(`key ${record.id} created for "${a.name}". It is shown only now:\n\n  ${key}\n`);
      return;
    }
    case 'keys list': {
      const a = await account(rest[0]);
      for (const k of await db().prisma.apiKey.findMany({
        where: { accountId: a.id },
        orderBy: { createdAt: 'asc' },
      })) {
        const limits = [
          k.dailyRequestLimit != null && `rpd ${k.dailyRequestLimit}`,
          k.dailyUsdLimit != null && `usd/day ${formatAmount(BigInt(k.dailyUsdLimit.toString()), 'USD')}`,
        ]
          .filter(Boolean)
          .join(', ');
        console.log(`${k.id}  ${k.prefix}…  ${k.status.padEnd(8)} ${k.name ?? ''} ${limits}`);
      }
      return;
    }
    case 'keys redaction': {
      const mode = redactionMode(rest[1]);
      if (!rest[0] || !mode) throw new UsageError('keys redaction <key id | display prefix> inherit|always|never');
      const n = await setKeyRedaction(rest[0], mode);
      if (n === 0) throw new UsageError(`no key matches "${rest[0]}"`);
      console.log(`${n} key(s): PII redaction ${mode}`);
      return;
    }
    case 'keys revoke': {
      if (!rest[0]) throw new UsageError('keys revoke <key id | display prefix>');
      const n = await revokeKey(rest[0]);
      if (n === 0) throw new UsageError(`no key matches "${rest[0]}"`);
      console.log(`${n} key(s) revoked. Running API processes stop accepting it within their key cache time.`);
      return;
    }
    default:
      throw new UsageError(`unknown command "${args.join(' ')}"\n\n${HELP}`);
  }
}

/** The `users` commands. */
async function usersCommand(cmd: string, rest: string[]): Promise<void> {
  switch (cmd) {
    case 'users create': {
      const email = rest[0];
      if (!email || !looksLikeEmail(email)) throw new UsageError('users create <email>: an e-mail address');
      const name = opt.name?.trim() || defaultDisplayName(email.trim().toLowerCase());
      if (name.length > 100) throw new UsageError('--name is at most 100 characters');
      const u = await createUser({ email, name, password: password() ?? null }).catch((err) => {
        throw err instanceof EmailTaken ? new UsageError(err.message) : err;
      });
      if (opt.balance)
        await credit({
          accountId: u.accountId,
          currency: 'USD',
          amount: parseAmount(opt.balance, 'USD'),
          reason: 'opening balance',
          idempotencyKey: `opening:${u.accountId}`,
        });
      console.log(
        `user ${u.id} (${u.uuid}) ${u.email} "${u.displayName}" created, account ${u.accountId}; signs in ${
          u.passwordHash ? 'with the password given or ' : ''
        }by e-mail code`,
      );
      return show(u.accountId, 5);
    }
    case 'users list': {
      for (const u of await listUsers()) {
        const how = u.passwordHash ? '' : '  (code sign-in only)';
        const who = `${String(u.id).padStart(5)}  ${u.uuid}  ${u.email.padEnd(30)} ${u.displayName.padEnd(20)}`;
        console.log(`${who} account ${u.accountId}${how}`);
      }
      return;
    }
    case 'users password': {
      const u = await user(rest[0]);
      const p = password();
      if (!p) throw new UsageError('users password <email> --password <new password>');
      await setPassword(u.id, p);
      const ended = await revokeUserSessions(u.id);
      console.log(`password of ${u.email} changed; ${ended} open session(s) ended`);
      return;
    }
    case 'users sign-out': {
      const u = await user(rest[0]);
      console.log(`${await revokeUserSessions(u.id)} session(s) of ${u.email} ended`);
      return;
    }
    default:
      throw new UsageError(`unknown command "${args.join(' ')}"\n\n${HELP}`);
  }
}

const log = (m: string) => console.error(`[ops] ${m}`);
const database = await openDatabase({ migrate: true, log: () => undefined }).catch((err: Error) => {
  console.error(`cannot open the database: ${err.message}`);
  process.exit(1);
});
let code = 0;
try {
  await run();
} catch (err) {
  code = 1;
  if (err instanceof UsageError) console.error(err.message);
  else if (err instanceof InsufficientFunds)
    console.error(
      `refused: that would leave less than what is held (available ${formatAmount(err.availableUsd, 'USD')})`,
    );
  else log((err as Error).message);
} finally {
  await database.stop();
}
process.exit(code);
