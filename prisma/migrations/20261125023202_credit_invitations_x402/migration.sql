-- CreateTable
CREATE TABLE "credit_invitations" (
    "id" TEXT NOT NULL,
    "code" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "issuer_account_id" UUID NOT NULL,
    "amount" DECIMAL(60,0) NOT NULL,
    "currency" "Currency",
    "hold_id" UUID,
    "recipient_name" TEXT,
    "issuer_name" TEXT,
    "issuer_note" TEXT,
    "status" TEXT NOT NULL DEFAULT 'active',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    "closed_at" TIMESTAMPTZ(3),

    CONSTRAINT "credit_invitations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "credit_invitation_redemptions" (
    "invitation_id" TEXT NOT NULL,
    "account_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "credit_invitation_redemptions_pkey" PRIMARY KEY ("invitation_id","account_id")
);

-- CreateTable
CREATE TABLE "x402_payments" (
    "id" TEXT NOT NULL,
    "request_hash" TEXT NOT NULL,
    "route" TEXT NOT NULL,
    "body" JSONB NOT NULL,
    "amount_usd" DECIMAL(60,0) NOT NULL,
    "requirements" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "nonce" TEXT,
    "payer" TEXT,
    "transaction" TEXT,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "paid_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "x402_payments_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "credit_invitations_code_key" ON "credit_invitations"("code");

-- CreateIndex
CREATE INDEX "credit_invitations_issuer_account_id_created_at_idx" ON "credit_invitations"("issuer_account_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "x402_payments_nonce_key" ON "x402_payments"("nonce");

-- CreateIndex
CREATE INDEX "x402_payments_request_hash_idx" ON "x402_payments"("request_hash");

-- AddForeignKey
ALTER TABLE "credit_invitations" ADD CONSTRAINT "credit_invitations_issuer_account_id_fkey" FOREIGN KEY ("issuer_account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "credit_invitation_redemptions" ADD CONSTRAINT "credit_invitation_redemptions_invitation_id_fkey" FOREIGN KEY ("invitation_id") REFERENCES "credit_invitations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
