-- CreateEnum
CREATE TYPE "Currency" AS ENUM ('USD', 'XNO');

-- CreateEnum
CREATE TYPE "AccountStatus" AS ENUM ('active', 'suspended');

-- CreateEnum
CREATE TYPE "KeyStatus" AS ENUM ('active', 'inactive', 'revoked');

-- CreateEnum
CREATE TYPE "BillingMode" AS ENUM ('auto', 'paygo', 'subscription_only');

-- CreateEnum
CREATE TYPE "LedgerKind" AS ENUM ('credit', 'debit', 'charge', 'refund');

-- CreateEnum
CREATE TYPE "HoldStatus" AS ENUM ('active', 'settled', 'released', 'expired');

-- CreateTable
CREATE TABLE "accounts" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "status" "AccountStatus" NOT NULL DEFAULT 'active',
    "provider_allow" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "provider_deny" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "zdr_only" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "accounts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "balances" (
    "account_id" UUID NOT NULL,
    "currency" "Currency" NOT NULL,
    "amount" DECIMAL(60,0) NOT NULL DEFAULT 0,
    "held" DECIMAL(60,0) NOT NULL DEFAULT 0,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "balances_pkey" PRIMARY KEY ("account_id","currency")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "account_id" UUID NOT NULL,
    "name" TEXT,
    "hash" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "status" "KeyStatus" NOT NULL DEFAULT 'active',
    "expires_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),
    "daily_request_limit" INTEGER,
    "daily_usd_limit" DECIMAL(60,0),
    "provider_allow" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "provider_deny" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "zdr_only" BOOLEAN NOT NULL DEFAULT false,
    "billing_mode" "BillingMode" NOT NULL DEFAULT 'auto',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "key_daily_usage" (
    "key_id" UUID NOT NULL,
    "day" DATE NOT NULL,
    "requests" INTEGER NOT NULL DEFAULT 0,
    "usd_spent" DECIMAL(60,0) NOT NULL DEFAULT 0,

    CONSTRAINT "key_daily_usage_pkey" PRIMARY KEY ("key_id","day")
);

-- CreateTable
CREATE TABLE "ledger_entries" (
    "id" BIGSERIAL NOT NULL,
    "account_id" UUID NOT NULL,
    "currency" "Currency" NOT NULL,
    "amount" DECIMAL(60,0) NOT NULL,
    "balance_after" DECIMAL(60,0) NOT NULL,
    "kind" "LedgerKind" NOT NULL,
    "reason" TEXT,
    "idempotency_key" TEXT NOT NULL,
    "hold_id" UUID,
    "request_id" TEXT,
    "refund_of" BIGINT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ledger_entries_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "balance_holds" (
    "id" UUID NOT NULL,
    "account_id" UUID NOT NULL,
    "currency" "Currency" NOT NULL,
    "amount" DECIMAL(60,0) NOT NULL,
    "quoted_usd" DECIMAL(60,0) NOT NULL,
    "status" "HoldStatus" NOT NULL DEFAULT 'active',
    "idempotency_key" TEXT NOT NULL,
    "request_id" TEXT,
    "api_key_id" UUID,
    "charged" DECIMAL(60,0),
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "closed_at" TIMESTAMPTZ(3),

    CONSTRAINT "balance_holds_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "providers" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "protocol" TEXT NOT NULL,
    "base_url" TEXT,
    "zero_data_retention" BOOLEAN NOT NULL DEFAULT false,
    "options" JSONB NOT NULL DEFAULT '{}',
    "active" BOOLEAN NOT NULL DEFAULT true,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "providers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "models" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "aliases" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "description" TEXT NOT NULL DEFAULT '',
    "owned_by" TEXT NOT NULL,
    "category" TEXT NOT NULL,
    "context_length" INTEGER,
    "max_output_tokens" INTEGER,
    "capabilities" JSONB NOT NULL DEFAULT '{}',
    "input_modalities" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "output_modalities" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "supported_endpoints" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "supported_batch_endpoints" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "supported_service_tiers" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "options" JSONB NOT NULL DEFAULT '{}',
    "active" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "models_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "provider_routes" (
    "id" UUID NOT NULL,
    "model_id" TEXT NOT NULL,
    "provider_id" TEXT NOT NULL,
    "upstream_model" TEXT NOT NULL,
    "position" INTEGER NOT NULL DEFAULT 0,
    "input_price" DECIMAL(60,0) NOT NULL,
    "output_price" DECIMAL(60,0) NOT NULL,
    "cached_input_price" DECIMAL(60,0),
    "markup_bps" INTEGER NOT NULL DEFAULT 0,
    "quantization" TEXT,
    "context_length" INTEGER,
    "max_output_tokens" INTEGER,
    "zero_data_retention" BOOLEAN NOT NULL DEFAULT false,
    "supports_tools" BOOLEAN NOT NULL DEFAULT true,
    "supports_caching" BOOLEAN NOT NULL DEFAULT false,
    "options" JSONB NOT NULL DEFAULT '{}',
    "active" BOOLEAN NOT NULL DEFAULT true,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "provider_routes_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "request_records" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "api_key_id" UUID,
    "surface" TEXT NOT NULL,
    "model" TEXT NOT NULL,
    "provider_id" TEXT,
    "status" TEXT NOT NULL,
    "input_tokens" INTEGER,
    "output_tokens" INTEGER,
    "currency" "Currency",
    "cost" DECIMAL(60,0),
    "hold_id" UUID,
    "error_code" TEXT,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "request_records_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_hash_key" ON "api_keys"("hash");

-- CreateIndex
CREATE INDEX "api_keys_account_id_idx" ON "api_keys"("account_id");

-- CreateIndex
CREATE UNIQUE INDEX "ledger_entries_idempotency_key_key" ON "ledger_entries"("idempotency_key");

-- CreateIndex
CREATE INDEX "ledger_entries_account_id_created_at_idx" ON "ledger_entries"("account_id", "created_at");

-- CreateIndex
CREATE INDEX "ledger_entries_refund_of_idx" ON "ledger_entries"("refund_of");

-- CreateIndex
CREATE UNIQUE INDEX "balance_holds_idempotency_key_key" ON "balance_holds"("idempotency_key");

-- CreateIndex
CREATE INDEX "balance_holds_status_expires_at_idx" ON "balance_holds"("status", "expires_at");

-- CreateIndex
CREATE INDEX "balance_holds_account_id_idx" ON "balance_holds"("account_id");

-- CreateIndex
CREATE UNIQUE INDEX "provider_routes_model_id_provider_id_key" ON "provider_routes"("model_id", "provider_id");

-- CreateIndex
CREATE INDEX "request_records_account_id_started_at_idx" ON "request_records"("account_id", "started_at");

-- AddForeignKey
ALTER TABLE "balances" ADD CONSTRAINT "balances_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "key_daily_usage" ADD CONSTRAINT "key_daily_usage_key_id_fkey" FOREIGN KEY ("key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ledger_entries" ADD CONSTRAINT "ledger_entries_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "balance_holds" ADD CONSTRAINT "balance_holds_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "provider_routes" ADD CONSTRAINT "provider_routes_model_id_fkey" FOREIGN KEY ("model_id") REFERENCES "models"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "provider_routes" ADD CONSTRAINT "provider_routes_provider_id_fkey" FOREIGN KEY ("provider_id") REFERENCES "providers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "request_records" ADD CONSTRAINT "request_records_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
