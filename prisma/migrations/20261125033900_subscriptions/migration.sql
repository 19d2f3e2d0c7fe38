-- CreateTable
CREATE TABLE "subscription_plans" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL DEFAULT '',
    "price" DECIMAL(60,0) NOT NULL,
    "period_seconds" INTEGER NOT NULL,
    "daily_limit" INTEGER NOT NULL,
    "monthly_limit" INTEGER NOT NULL,
    "models" TEXT[],
    "active" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "subscription_plans_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "subscriptions" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "plan_id" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'active',
    "period_no" INTEGER NOT NULL DEFAULT 1,
    "period_start" TIMESTAMPTZ(3) NOT NULL,
    "period_end" TIMESTAMPTZ(3) NOT NULL,
    "grace_until" TIMESTAMPTZ(3),
    "cancel_at_period_end" BOOLEAN NOT NULL DEFAULT false,
    "price" DECIMAL(60,0) NOT NULL,
    "daily_limit" INTEGER NOT NULL,
    "monthly_limit" INTEGER NOT NULL,
    "models" TEXT[],
    "daily_day" DATE NOT NULL DEFAULT ((now() AT TIME ZONE 'UTC'))::date,
    "daily_used" INTEGER NOT NULL DEFAULT 0,
    "monthly_used" INTEGER NOT NULL DEFAULT 0,
    "end_reason" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "ended_at" TIMESTAMPTZ(3),

    CONSTRAINT "subscriptions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "subscriptions_account_id_idx" ON "subscriptions"("account_id");

-- AddForeignKey
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_plan_id_fkey" FOREIGN KEY ("plan_id") REFERENCES "subscription_plans"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- At most one live (active or grace) subscription per account: two subscribe requests at once
-- cannot both win. The counters never pass their limits or go below zero.
CREATE UNIQUE INDEX "subscriptions_one_live" ON "subscriptions"("account_id") WHERE "status" <> 'inactive';
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_status_check" CHECK ("status" IN ('active', 'grace', 'inactive'));
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_counters_check"
  CHECK ("daily_used" >= 0 AND "monthly_used" >= 0 AND "daily_used" <= "daily_limit" AND "monthly_used" <= "monthly_limit");
