-- AlterTable
ALTER TABLE "models" ADD COLUMN     "batch_price_bps" INTEGER;

-- CreateTable
CREATE TABLE "batches" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "api_key_id" UUID,
    "endpoint" TEXT NOT NULL,
    "model" TEXT,
    "status" TEXT NOT NULL DEFAULT 'validating',
    "input_file_id" TEXT,
    "output_file_id" TEXT,
    "error_file_id" TEXT,
    "metadata" JSONB,
    "input" JSONB,
    "payer" JSONB NOT NULL,
    "total" INTEGER NOT NULL DEFAULT 0,
    "completed" INTEGER NOT NULL DEFAULT 0,
    "failed" INTEGER NOT NULL DEFAULT 0,
    "cancelled" INTEGER NOT NULL DEFAULT 0,
    "expired" INTEGER NOT NULL DEFAULT 0,
    "input_tokens" BIGINT NOT NULL DEFAULT 0,
    "output_tokens" BIGINT NOT NULL DEFAULT 0,
    "cost" DECIMAL(60,0) NOT NULL DEFAULT 0,
    "errors" JSONB,
    "idempotency_key" TEXT,
    "request_hash" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "in_progress_at" TIMESTAMPTZ(3),
    "finalizing_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "cancelling_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "batches_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "batch_rows" (
    "batch_id" TEXT NOT NULL,
    "idx" INTEGER NOT NULL,
    "custom_id" TEXT NOT NULL,
    "body" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "status_code" INTEGER,
    "result" JSONB,
    "input_tokens" INTEGER,
    "output_tokens" INTEGER,
    "cost" DECIMAL(60,0),
    "hold_id" UUID,
    "provider_id" TEXT,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "batch_rows_pkey" PRIMARY KEY ("batch_id","idx")
);

-- CreateTable
CREATE TABLE "batch_slots" (
    "account_id" UUID NOT NULL,
    "slot" INTEGER NOT NULL,
    "holder" TEXT,
    "expires_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "batch_slots_pkey" PRIMARY KEY ("account_id","slot")
);

-- CreateIndex
CREATE INDEX "batches_account_id_kind_created_at_idx" ON "batches"("account_id", "kind", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "batches_account_id_idempotency_key_key" ON "batches"("account_id", "idempotency_key");

-- AddForeignKey
ALTER TABLE "batches" ADD CONSTRAINT "batches_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "batch_rows" ADD CONSTRAINT "batch_rows_batch_id_fkey" FOREIGN KEY ("batch_id") REFERENCES "batches"("id") ON DELETE CASCADE ON UPDATE CASCADE;
