// A loopback SMTP server speaking enough real SMTP (RFC 5321: EHLO/HELO, MAIL, RCPT, DATA with
// dot-unstuffing, RSET, NOOP, QUIT) for nodemailer to deliver to it, so tests read what the
// gateway really sent over a real SMTP conversation. No TLS, no AUTH: the gateway is pointed at it
// with SMTP_URL=smtp://127.0.0.1:<port>.
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

interface ReceivedMail {
  from: string;
  to: string[];
  /** the message as sent (headers and body), after dot-unstuffing */
  raw: string;
  subject: string;
  /** the body with quoted-printable soft breaks and escapes undone */
  text: string;
}

function decodeQuotedPrintable(s: string): string {
  return s
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(Number.parseInt(h, 16)));
}

function parse(from: string, to: string[], raw: string): ReceivedMail {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = raw.slice(split + 4);
  const header = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, 'im').exec(head)?.[1] ?? '';
  const qp = /quoted-printable/i.test(header('Content-Transfer-Encoding'));
  return { from, to, raw, subject: header('Subject'), text: qp ? decodeQuotedPrintable(body) : body };
}

export interface SmtpServer {
  url: string;
  mails: ReceivedMail[];
  /** the next mail to `to` not yet taken (or fail after `timeoutMs`) */
  next(to: string, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

export async function startSmtpServer(): Promise<SmtpServer> {
  const mails: ReceivedMail[] = [];
  const taken = new Set<ReceivedMail>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const say = (line: string) => socket.write(`${line}\r\n`);
    let buffer = '';
    let from = '';
    let to: string[] = [];
    let data: string[] | null = null;
    say('220 loopback ESMTP test server');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      for (let i = buffer.indexOf('\r\n'); i >= 0; i = buffer.indexOf('\r\n')) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        if (data) {
          if (line === '.') {
            mails.push(parse(from, to, data.join('\r\n')));
            data = null;
            from = '';
            to = [];
            say('250 2.0.0 queued');
          } else data.push(line.startsWith('.') ? line.slice(1) : line);
          continue;
        }
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO') say('250-loopback\r\n250-8BITMIME\r\n250 SMTPUTF8');
        else if (verb === 'HELO') say('250 loopback');
        else if (verb === 'MAIL') {
          from = /<([^>]*)>/.exec(line)?.[1] ?? '';
          say('250 2.1.0 ok');
        } else if (verb === 'RCPT') {
          to.push(/<([^>]*)>/.exec(line)?.[1] ?? '');
          say('250 2.1.5 ok');
        } else if (verb === 'DATA') {
          data = [];
          say('354 end data with <CR><LF>.<CR><LF>');
        } else if (verb === 'RSET') {
          from = '';
          to = [];
          say('250 ok');
        } else if (verb === 'NOOP') say('250 ok');
        else if (verb === 'QUIT') {
          say('221 bye');
          socket.end();
        } else say('502 5.5.2 command not implemented');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    async next(address, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const mail = mails.find((m) => !taken.has(m) && m.to.includes(address));
        if (mail) {
          taken.add(mail);
          return mail;
        }
        if (Date.now() > deadline) throw new Error(`no mail to ${address} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
