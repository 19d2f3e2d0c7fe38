-- CreateEnum
CREATE TYPE "RedactionDefault" AS ENUM ('inherit', 'always', 'never');

-- AlterTable
ALTER TABLE "accounts" ADD COLUMN     "redaction" "RedactionDefault" NOT NULL DEFAULT 'inherit';

-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "redaction" "RedactionDefault" NOT NULL DEFAULT 'inherit';
