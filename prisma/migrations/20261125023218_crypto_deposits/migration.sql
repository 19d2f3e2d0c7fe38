-- CreateTable
CREATE TABLE "crypto_deposits" (
    "id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "api_key_id" UUID,
    "ticker" TEXT NOT NULL,
    "payment_method_id" TEXT NOT NULL,
    "amount_usd" DECIMAL(60,0) NOT NULL,
    "invoice_id" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "coin_amount" TEXT NOT NULL,
    "coin_currency" TEXT NOT NULL,
    "payment_link" TEXT,
    "status" TEXT NOT NULL DEFAULT 'New',
    "invoice_status" TEXT,
    "credited_usd" DECIMAL(60,0),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "monitoring_until" TIMESTAMPTZ(3) NOT NULL,
    "closed_at" TIMESTAMPTZ(3),

    CONSTRAINT "crypto_deposits_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "crypto_deposits_invoice_id_key" ON "crypto_deposits"("invoice_id");

-- CreateIndex
CREATE INDEX "crypto_deposits_account_id_created_at_idx" ON "crypto_deposits"("account_id", "created_at");

-- AddForeignKey
ALTER TABLE "crypto_deposits" ADD CONSTRAINT "crypto_deposits_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
