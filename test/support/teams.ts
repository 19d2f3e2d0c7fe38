// People and teams for the teams tests: users signed in through real sessions (a Browser holding
// the cookie), and a team with an owner, an admin, a member, another member to act on, and
// someone outside it.
import { randomUUID } from 'node:crypto';
import { Browser } from './browser.js';
import { createUser, type User } from '../../activities/accounts/users.js';
import { createSession } from '../../activities/accounts/sessions.js';
import { db } from '../../activities/db.js';

export interface Person {
  user: User;
  b: Browser;
}

let n = 0;
export const teamEmail = () => `team-${process.pid}-${++n}-${randomUUID().slice(0, 6)}@example.test`;

export async function person(base: string, name = 'Person', email = teamEmail()): Promise<Person> {
  const user = await createUser({ email, name, password: null });
  const session = await createSession(user.id, { method: 'password' });
  const b = new Browser(base);
  b.cookie = session.token;
  return { user, b };
}

export interface TeamFixture {
  id: number;
  uuid: string;
  name: string;
  owner: Person;
  admin: Person;
  member: Person;
  /** a second member, for routes that act on someone */
  target: Person;
  outsider: Person;
}

export async function teamFixture(base: string): Promise<TeamFixture> {
  const [owner, admin, member, target, outsider] = await Promise.all([
    person(base, 'Owner'),
    person(base, 'Admin'),
    person(base, 'Member'),
    person(base, 'Target'),
    person(base, 'Outsider'),
  ]);
  const name = `Team ${process.pid} ${++n}`;
  const r = await owner.b.post('/api/teams', { name });
  if (r.status !== 200) throw new Error(`team not created: ${JSON.stringify(r.body)}`);
  const { id, uuid } = r.body.team;
  await db().pool.query(
    `INSERT INTO team_members (team_id, user_id, role)
     VALUES ($1, $2, 'admin'), ($1, $3, 'member'), ($1, $4, 'member')`,
    [id, admin.user.id, member.user.id, target.user.id],
  );
  return { id, uuid, name, owner, admin, member, target, outsider };
}
