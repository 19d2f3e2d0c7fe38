-- CreateTable
CREATE TABLE "tee_body_digests" (
    "provider_id" TEXT NOT NULL,
    "chat_id" TEXT NOT NULL,
    "request_sha256" TEXT NOT NULL,
    "response_sha256" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tee_body_digests_pkey" PRIMARY KEY ("provider_id","chat_id")
);

-- CreateIndex
CREATE INDEX "tee_body_digests_created_at_idx" ON "tee_body_digests"("created_at");
