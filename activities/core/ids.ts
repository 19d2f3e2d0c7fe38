// Public ids: a prefix naming the kind (`resp`, `msg`, `batch`, ...) and 24 random bytes in hex.
import { randomBytes } from 'node:crypto';

export const newId = (prefix: string) => `${prefix}_${randomBytes(24).toString('hex')}`;
