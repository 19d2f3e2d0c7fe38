-- Hand-written: invariants on money columns that schema.prisma cannot express. A statement that
-- would break one of them fails instead of silently corrupting a balance. Prisma's diff ignores
-- CHECK constraints, so later generated migrations leave these alone.

-- Balances: never negative, and the part held by active holds never exceeds the balance.
ALTER TABLE "balances" ADD CONSTRAINT "balances_amount_nonnegative" CHECK ("amount" >= 0);
ALTER TABLE "balances" ADD CONSTRAINT "balances_held_nonnegative" CHECK ("held" >= 0);
ALTER TABLE "balances" ADD CONSTRAINT "balances_held_within_amount" CHECK ("held" <= "amount");

-- A hold reserves a positive amount.
ALTER TABLE "balance_holds" ADD CONSTRAINT "balance_holds_amount_positive" CHECK ("amount" > 0);

-- API key usage: the per-day counters and the daily caps are never negative (NULL cap = no cap).
ALTER TABLE "key_daily_usage" ADD CONSTRAINT "key_daily_usage_requests_nonnegative" CHECK ("requests" >= 0);
ALTER TABLE "key_daily_usage" ADD CONSTRAINT "key_daily_usage_usd_spent_nonnegative" CHECK ("usd_spent" >= 0);
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_daily_request_limit_nonnegative" CHECK ("daily_request_limit" >= 0);
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_daily_usd_limit_nonnegative" CHECK ("daily_usd_limit" >= 0);

-- Route prices and markup (NULL cached price = not offered).
ALTER TABLE "provider_routes" ADD CONSTRAINT "provider_routes_input_price_nonnegative" CHECK ("input_price" >= 0);
ALTER TABLE "provider_routes" ADD CONSTRAINT "provider_routes_output_price_nonnegative" CHECK ("output_price" >= 0);
ALTER TABLE "provider_routes" ADD CONSTRAINT "provider_routes_cached_input_price_nonnegative" CHECK ("cached_input_price" >= 0);
ALTER TABLE "provider_routes" ADD CONSTRAINT "provider_routes_markup_bps_nonnegative" CHECK ("markup_bps" >= 0);
