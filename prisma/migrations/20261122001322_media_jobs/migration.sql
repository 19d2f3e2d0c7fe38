-- CreateTable
CREATE TABLE "media_jobs" (
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "api_key_id" UUID,
    "model" TEXT NOT NULL,
    "provider_id" TEXT NOT NULL,
    "upstream_model" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "provider_status" TEXT,
    "provider_request_id" TEXT,
    "progress" INTEGER,
    "eta_seconds" INTEGER,
    "request" JSONB NOT NULL,
    "conversation_uuid" TEXT,
    "currency" "Currency",
    "precharge" DECIMAL(60,0),
    "cost" DECIMAL(60,0),
    "hold_id" UUID,
    "payment_source" TEXT,
    "output_file_id" TEXT,
    "output_url" TEXT,
    "result" JSONB,
    "error" TEXT,
    "is_nsfw_error" BOOLEAN NOT NULL DEFAULT false,
    "user_friendly_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "media_jobs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "hosted_files" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "job_id" TEXT,
    "content_type" TEXT NOT NULL,
    "byte_size" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "hosted_files_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "gateway_secrets" (
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "gateway_secrets_pkey" PRIMARY KEY ("name")
);

-- CreateIndex
CREATE INDEX "media_jobs_account_id_kind_created_at_idx" ON "media_jobs"("account_id", "kind", "created_at");

-- CreateIndex
CREATE INDEX "media_jobs_account_id_conversation_uuid_idx" ON "media_jobs"("account_id", "conversation_uuid");

-- CreateIndex
CREATE INDEX "hosted_files_expires_at_idx" ON "hosted_files"("expires_at");

-- AddForeignKey
ALTER TABLE "media_jobs" ADD CONSTRAINT "media_jobs_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "hosted_files" ADD CONSTRAINT "hosted_files_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
