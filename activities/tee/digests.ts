// The sha256 of the exact bodies of each TEE answer (what the gateway sent, what it received), kept
// for the signature lookup window: a signature fetched later, from any API process, is compared with
// the bodies this gateway really exchanged, not only with itself.
import { db } from '../db.js';

/** how long after an answer its body digests are kept (the billing lookup's window too) */
const TEE_DIGEST_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface BodyDigests {
  /** sha256 (hex) of the request body sent */
  request: string;
  /** sha256 (hex) of the response body received */
  response: string;
}

/** Keep one answer's digests (a repeated chat id keeps the first), and drop those past the window. */
export async function keepBodyDigests(providerId: string, chatId: string, d: BodyDigests): Promise<void> {
  const prisma = db().prisma;
  await prisma.teeBodyDigest.upsert({
    where: { providerId_chatId: { providerId, chatId } },
    create: { providerId, chatId, requestSha256: d.request, responseSha256: d.response },
    update: {},
  });
  await prisma.teeBodyDigest.deleteMany({ where: { createdAt: { lt: new Date(Date.now() - TEE_DIGEST_WINDOW_MS) } } });
}

/** The digests kept for an answer within the window, or null. */
export async function keptBodyDigests(providerId: string, chatId: string): Promise<BodyDigests | null> {
  const r = await db().prisma.teeBodyDigest.findFirst({
    where: { providerId, chatId, createdAt: { gt: new Date(Date.now() - TEE_DIGEST_WINDOW_MS) } },
  });
  return r ? { request: r.requestSha256, response: r.responseSha256 } : null;
}
