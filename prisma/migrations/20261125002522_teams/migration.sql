-- AlterTable
ALTER TABLE "balance_holds" ADD COLUMN     "actor_user_id" INTEGER,
ADD COLUMN     "team_id" INTEGER;

-- AlterTable
ALTER TABLE "ledger_entries" ADD COLUMN     "actor_user_id" INTEGER,
ADD COLUMN     "team_id" INTEGER;

-- CreateTable
CREATE TABLE "teams" (
    "id" SERIAL NOT NULL,
    "uuid" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "name_key" TEXT NOT NULL,
    "owner_user_id" INTEGER NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'active',
    "paused_at" TIMESTAMPTZ(3),
    "suspended_at" TIMESTAMPTZ(3),
    "invite_link_enabled" BOOLEAN NOT NULL DEFAULT false,
    "invite_link_token" TEXT,
    "default_member_usage_limit" DECIMAL(60,0),
    "usage_limit" DECIMAL(60,0),
    "usage_limit_enforced" BOOLEAN NOT NULL DEFAULT false,
    "allowed_models" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "teams_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "team_members" (
    "team_id" INTEGER NOT NULL,
    "user_id" INTEGER NOT NULL,
    "role" TEXT NOT NULL,
    "member_name" TEXT,
    "bill_to_team" BOOLEAN NOT NULL DEFAULT false,
    "usage_limit" DECIMAL(60,0),
    "usage_limit_enforced" BOOLEAN,
    "joined_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "team_members_pkey" PRIMARY KEY ("team_id","user_id")
);

-- CreateTable
CREATE TABLE "team_invitations" (
    "id" TEXT NOT NULL,
    "team_id" INTEGER NOT NULL,
    "email" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "token" TEXT NOT NULL,
    "invited_by" INTEGER NOT NULL,
    "accepted_by" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "closed_at" TIMESTAMPTZ(3),

    CONSTRAINT "team_invitations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "team_join_requests" (
    "id" UUID NOT NULL,
    "team_id" INTEGER NOT NULL,
    "user_id" INTEGER NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "processed_at" TIMESTAMPTZ(3),

    CONSTRAINT "team_join_requests_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "team_usage" (
    "team_id" INTEGER NOT NULL,
    "user_id" INTEGER NOT NULL,
    "month" DATE NOT NULL,
    "spent" DECIMAL(60,0) NOT NULL DEFAULT 0,
    "held" DECIMAL(60,0) NOT NULL DEFAULT 0,

    CONSTRAINT "team_usage_pkey" PRIMARY KEY ("team_id","user_id","month")
);

-- CreateTable
CREATE TABLE "team_budget_holds" (
    "request_id" TEXT NOT NULL,
    "team_id" INTEGER NOT NULL,
    "user_id" INTEGER NOT NULL,
    "month" DATE NOT NULL,
    "amount" DECIMAL(60,0) NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'active',
    "charged" DECIMAL(60,0),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "team_budget_holds_pkey" PRIMARY KEY ("request_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "teams_uuid_key" ON "teams"("uuid");

-- CreateIndex
CREATE UNIQUE INDEX "teams_invite_link_token_key" ON "teams"("invite_link_token");

-- CreateIndex
CREATE UNIQUE INDEX "teams_owner_user_id_name_key_key" ON "teams"("owner_user_id", "name_key");

-- CreateIndex
CREATE INDEX "team_members_user_id_idx" ON "team_members"("user_id");

-- CreateIndex
CREATE UNIQUE INDEX "team_invitations_token_key" ON "team_invitations"("token");

-- CreateIndex
CREATE INDEX "team_invitations_team_id_status_idx" ON "team_invitations"("team_id", "status");

-- CreateIndex
CREATE INDEX "team_join_requests_team_id_status_idx" ON "team_join_requests"("team_id", "status");

-- CreateIndex
CREATE INDEX "team_join_requests_user_id_idx" ON "team_join_requests"("user_id");

-- CreateIndex
CREATE INDEX "team_budget_holds_status_created_at_idx" ON "team_budget_holds"("status", "created_at");

-- CreateIndex
CREATE INDEX "ledger_entries_team_id_created_at_idx" ON "ledger_entries"("team_id", "created_at");

-- AddForeignKey
ALTER TABLE "teams" ADD CONSTRAINT "teams_owner_user_id_fkey" FOREIGN KEY ("owner_user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "team_members" ADD CONSTRAINT "team_members_team_id_fkey" FOREIGN KEY ("team_id") REFERENCES "teams"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "team_members" ADD CONSTRAINT "team_members_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "team_invitations" ADD CONSTRAINT "team_invitations_team_id_fkey" FOREIGN KEY ("team_id") REFERENCES "teams"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "team_join_requests" ADD CONSTRAINT "team_join_requests_team_id_fkey" FOREIGN KEY ("team_id") REFERENCES "teams"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "team_join_requests" ADD CONSTRAINT "team_join_requests_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "team_usage" ADD CONSTRAINT "team_usage_team_id_fkey" FOREIGN KEY ("team_id") REFERENCES "teams"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- A user bills to at most one team at a time (setting bill_to_team on one clears the others).
CREATE UNIQUE INDEX "team_members_one_billing_team" ON "team_members"("user_id") WHERE "bill_to_team";
-- One owner per team, and roles and states are closed sets.
CREATE UNIQUE INDEX "team_members_one_owner" ON "team_members"("team_id") WHERE "role" = 'owner';
ALTER TABLE "team_members" ADD CONSTRAINT "team_members_role_check" CHECK ("role" IN ('owner', 'admin', 'member'));
ALTER TABLE "teams" ADD CONSTRAINT "teams_status_check" CHECK ("status" IN ('active', 'paused', 'suspended'));
ALTER TABLE "team_invitations" ADD CONSTRAINT "team_invitations_status_check"
  CHECK ("status" IN ('pending', 'accepted', 'revoked', 'expired'));
-- One pending join request per person and team.
CREATE UNIQUE INDEX "team_join_requests_one_pending" ON "team_join_requests"("team_id", "user_id") WHERE "status" = 'pending';
-- Budgets are never negative.
ALTER TABLE "team_usage" ADD CONSTRAINT "team_usage_held_check" CHECK ("held" >= 0);
