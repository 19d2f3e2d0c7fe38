-- Every API process caches whom a user bills to (activities/ledger/teamBudget.ts). These triggers
-- announce each change that can alter it, whoever makes it (an API process, the worker, an
-- operator's SQL), on the channel the processes listen to (activities/accounts/cacheChanges.ts):
-- "u<user id>" for a member's own billing, "t<team id>" for a team's settings, "*" for all.
-- NOTIFY is delivered at commit, and not at all on rollback.
--
-- The function bodies are escape strings with \073 for the semicolons between their statements:
-- Prisma's driver-adapter engine splits a migration at every semicolon, dollar quotes or not.

CREATE FUNCTION switchyard_team_member_billing_changed() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  IF TG_OP <> ''INSERT'' THEN
    PERFORM pg_notify(''switchyard_team_billing_changes'', ''u'' || OLD.user_id)\073
  END IF\073
  IF TG_OP <> ''DELETE'' THEN
    PERFORM pg_notify(''switchyard_team_billing_changes'', ''u'' || NEW.user_id)\073
  END IF\073
  RETURN NULL\073
END';

CREATE TRIGGER team_member_billing_changed
  AFTER INSERT OR DELETE OR UPDATE OF team_id, user_id, bill_to_team, usage_limit, usage_limit_enforced
  ON team_members FOR EACH ROW EXECUTE FUNCTION switchyard_team_member_billing_changed();

CREATE FUNCTION switchyard_team_billing_changed() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  PERFORM pg_notify(''switchyard_team_billing_changes'', ''t'' || OLD.id)\073
  RETURN NULL\073
END';

CREATE TRIGGER team_billing_changed
  AFTER DELETE OR UPDATE OF id, uuid, name, status, owner_user_id, allowed_models, usage_limit,
    usage_limit_enforced, default_member_usage_limit
  ON teams FOR EACH ROW EXECUTE FUNCTION switchyard_team_billing_changed();

-- The owner's account pays: an owner moved to another account changes the billing of their teams.
CREATE FUNCTION switchyard_owner_account_changed() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  PERFORM pg_notify(''switchyard_team_billing_changes'', ''t'' || t.id) FROM teams t WHERE t.owner_user_id = NEW.id\073
  RETURN NULL\073
END';

CREATE TRIGGER owner_account_changed
  AFTER UPDATE OF account_id ON users FOR EACH ROW
  WHEN (OLD.account_id IS DISTINCT FROM NEW.account_id)
  EXECUTE FUNCTION switchyard_owner_account_changed();

-- TRUNCATE fires no row triggers: everything cached must go.
CREATE FUNCTION switchyard_team_billing_truncated() RETURNS trigger LANGUAGE plpgsql AS E'
BEGIN
  PERFORM pg_notify(''switchyard_team_billing_changes'', ''*'')\073
  RETURN NULL\073
END';

CREATE TRIGGER team_members_truncated AFTER TRUNCATE ON team_members
  FOR EACH STATEMENT EXECUTE FUNCTION switchyard_team_billing_truncated();
CREATE TRIGGER teams_truncated AFTER TRUNCATE ON teams
  FOR EACH STATEMENT EXECUTE FUNCTION switchyard_team_billing_truncated();
