// Who may become a user without the operator (SWITCHYARD_SIGNUP):
//   open    anyone: POST /api/auth/signup, or a first e-mail code for a new address (the default,
//           right for a local install);
//   invite  people are let in, not self-served: the operator's CLI (`npm run ops -- users create`)
//           makes users, and an address with a pending team invitation may sign up (by password or
//           e-mail code) to accept it; other self-service sign-up is refused;
//   closed  no new users except through the operator's CLI.
// Existing users sign in whatever the policy.
import { config } from '../config.js';
import { db } from '../db.js';

/** Why self-service sign-up is refused now, or null when it is allowed. */
function selfSignupRefusal(): string | null {
  switch (config.signupPolicy) {
    case 'open':
      return null;
    case 'invite':
      return (
        'Sign-up on this gateway is by invitation only. ' +
        'Ask a team owner to invite you, or the operator to create your account.'
      );
    default:
      return 'Sign-up on this gateway is closed. Ask its operator to create your account.';
  }
}

/**
 * Why `email` may not sign up on its own now, or null: under `invite`, an address with a pending,
 * unexpired team invitation may (the invitation is what admits it).
 */
export async function signupRefusalFor(email: string): Promise<string | null> {
  const refusal = selfSignupRefusal();
  if (!refusal || config.signupPolicy !== 'invite') return refusal;
  const { rows } = await db().pool.query(
    `SELECT 1 FROM team_invitations WHERE email = $1 AND status = 'pending' AND expires_at > now() LIMIT 1`,
    [email.trim().toLowerCase()],
  );
  return rows.length > 0 ? null : refusal;
}
