// Outgoing e-mail: sign-in codes today, team invitations next. Through SMTP with nodemailer when
// SMTP_URL is set (`smtp://user:pass@host:587`, `smtps://…:465`; STARTTLS is used when the server
// offers it), from MAIL_FROM. Without SMTP_URL the message is written to the log instead
// (recipient, subject and text, so the code or link in it), so a local install still signs people
// in. `sendMail` is an ordinary async function: the API calls it in-process, and the worker can
// register it as an activity (retried by the engine) for mail a workflow sends.
import type { Transporter } from 'nodemailer';
import { config } from '../config.js';

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

// One transport per SMTP_URL (tests change it while running); nodemailer opens a connection per message.
let transport: { url: string; t: Transporter } | undefined;

export async function sendMail(mail: Mail): Promise<void> {
  const url = config.smtpUrl;
  if (!url) {
    console.log(`[mail] SMTP_URL is not set, so this message is logged instead of sent:
  To: ${mail.to}
  Subject: ${mail.subject}
${mail.text.replace(/^/gm, '  | ')}`);
    return;
  }
  // imported by the first message sent, not by every API process at start (README, Memory of one API process)
  if (transport?.url !== url) transport = { url, t: (await import('nodemailer')).createTransport(url) };
  await transport.t.sendMail({ from: config.mailFrom, to: mail.to, subject: mail.subject, text: mail.text });
}
