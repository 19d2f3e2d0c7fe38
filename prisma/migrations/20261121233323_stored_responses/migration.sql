-- CreateTable
CREATE TABLE "stored_responses" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "status" TEXT NOT NULL,
    "request" JSONB NOT NULL,
    "response" JSONB NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stored_responses_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "stored_responses_account_id_created_at_idx" ON "stored_responses"("account_id", "created_at");

-- CreateIndex
CREATE INDEX "stored_responses_expires_at_idx" ON "stored_responses"("expires_at");

-- AddForeignKey
ALTER TABLE "stored_responses" ADD CONSTRAINT "stored_responses_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
