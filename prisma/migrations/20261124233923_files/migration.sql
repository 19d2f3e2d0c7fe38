-- CreateTable
CREATE TABLE "files" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "key_id" UUID,
    "purpose" TEXT NOT NULL,
    "filename" TEXT NOT NULL,
    "content_type" TEXT NOT NULL,
    "bytes" BIGINT NOT NULL,
    "staged" BOOLEAN NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "files_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "file_chunks" (
    "file_id" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "file_chunks_pkey" PRIMARY KEY ("file_id","seq")
);

-- CreateTable
CREATE TABLE "file_holds" (
    "file_id" TEXT NOT NULL,
    "holder_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "file_holds_pkey" PRIMARY KEY ("file_id","holder_id")
);

-- CreateIndex
CREATE INDEX "files_account_id_id_idx" ON "files"("account_id", "id");

-- CreateIndex
CREATE INDEX "files_key_id_staged_idx" ON "files"("key_id", "staged");

-- CreateIndex
CREATE INDEX "file_holds_holder_id_idx" ON "file_holds"("holder_id");

-- AddForeignKey
ALTER TABLE "files" ADD CONSTRAINT "files_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "files" ADD CONSTRAINT "files_key_id_fkey" FOREIGN KEY ("key_id") REFERENCES "api_keys"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "file_chunks" ADD CONSTRAINT "file_chunks_file_id_fkey" FOREIGN KEY ("file_id") REFERENCES "files"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "file_holds" ADD CONSTRAINT "file_holds_file_id_fkey" FOREIGN KEY ("file_id") REFERENCES "files"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- By hand (Prisma cannot express CHECK constraints: later generated migrations leave them alone).
ALTER TABLE "files" ADD CONSTRAINT "files_bytes_nonnegative" CHECK ("bytes" >= 0);
ALTER TABLE "files" ADD CONSTRAINT "files_purpose_known" CHECK ("purpose" IN ('batch', 'batch_output'));
