-- CreateTable
CREATE TABLE "memories" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "content" TEXT NOT NULL,
    "input_tokens" INTEGER NOT NULL,
    "cached_tokens" INTEGER NOT NULL,
    "output_tokens" INTEGER NOT NULL,
    "model_context_limit" INTEGER NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "memories_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "memory_segments" (
    "account_id" UUID NOT NULL,
    "hash" TEXT NOT NULL,
    "tokens" INTEGER NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "memory_segments_pkey" PRIMARY KEY ("account_id","hash")
);

-- CreateIndex
CREATE INDEX "memories_account_id_created_at_idx" ON "memories"("account_id", "created_at");

-- CreateIndex
CREATE INDEX "memories_expires_at_idx" ON "memories"("expires_at");

-- CreateIndex
CREATE INDEX "memory_segments_expires_at_idx" ON "memory_segments"("expires_at");

-- AddForeignKey
ALTER TABLE "memories" ADD CONSTRAINT "memories_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "memory_segments" ADD CONSTRAINT "memory_segments_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
