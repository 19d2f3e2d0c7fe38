// Copies the catalog file into the database in one transaction. Rows that left the file are
// deactivated rather than deleted: request records and ledger reasons still name them.
import { db } from '../db.js';
import type { CatalogFile, CatalogFileModel, CatalogFileRoute } from './file.js';

export async function syncCatalog(file: CatalogFile): Promise<{ models: number; routes: number; deactivated: number }> {
  let deactivated = 0;
  let routeCount = 0;
  await db().prisma.$transaction(
    async (tx) => {
      for (const p of file.providers) {
        const data = {
          name: p.name,
          protocol: p.protocol,
          baseUrl: p.baseUrl,
          zeroDataRetention: p.zeroDataRetention,
          options: p.options as object,
          active: true,
        };
        await tx.provider.upsert({ where: { id: p.id }, create: { id: p.id, ...data }, update: data });
      }
      deactivated += (
        await tx.provider.updateMany({
          where: { id: { notIn: file.providers.map((p) => p.id) }, active: true },
          data: { active: false },
        })
      ).count;

      for (const m of file.models) {
        const data = modelData(m);
        await tx.model.upsert({ where: { id: m.id }, create: { id: m.id, ...data }, update: data });
        for (const r of m.routes) {
          const route = routeData(r);
          await tx.providerRoute.upsert({
            where: { modelId_providerId: { modelId: m.id, providerId: r.providerId } },
            create: { modelId: m.id, providerId: r.providerId, ...route },
            update: route,
          });
          routeCount++;
        }
        deactivated += (
          await tx.providerRoute.updateMany({
            where: { modelId: m.id, providerId: { notIn: m.routes.map((r) => r.providerId) }, active: true },
            data: { active: false },
          })
        ).count;
      }
      deactivated += (
        await tx.model.updateMany({
          where: { id: { notIn: file.models.map((m) => m.id) }, active: true },
          data: { active: false },
        })
      ).count;

      // Plans: a plan left out of the file is deactivated (no new subscribers; subscriptions on it
      // end when their period does, see activities/subscriptions/periods.ts).
      for (const p of file.plans) {
        const data = {
          name: p.name,
          description: p.description,
          price: p.price.toString(),
          periodSeconds: p.periodSeconds,
          dailyLimit: p.dailyLimit,
          monthlyLimit: p.monthlyLimit,
          models: p.models,
          active: true,
        };
        await tx.subscriptionPlan.upsert({ where: { id: p.id }, create: { id: p.id, ...data }, update: data });
      }
      deactivated += (
        await tx.subscriptionPlan.updateMany({
          where: { id: { notIn: file.plans.map((p) => p.id) }, active: true },
          data: { active: false },
        })
      ).count;
    },
    { timeout: 60_000 },
  );
  return { models: file.models.length, routes: routeCount, deactivated };
}

/** A model's columns as the file states them. */
function modelData(m: CatalogFileModel) {
  return {
    name: m.name,
    aliases: m.aliases,
    description: m.description,
    ownedBy: m.ownedBy,
    category: m.category,
    contextLength: m.contextLength,
    maxOutputTokens: m.maxOutputTokens,
    capabilities: m.capabilities,
    inputModalities: m.inputModalities,
    outputModalities: m.outputModalities,
    supportedEndpoints: m.supportedEndpoints,
    supportedBatchEndpoints: m.supportedBatchEndpoints,
    supportedServiceTiers: m.supportedServiceTiers,
    batchPriceBps: m.batchPriceBps,
    options: m.options as object,
    active: true,
  };
}

/** A route's columns as the file states them. */
function routeData(r: CatalogFileRoute) {
  return {
    upstreamModel: r.upstreamModel,
    position: r.position,
    inputPrice: r.inputPrice.toString(),
    outputPrice: r.outputPrice.toString(),
    cachedInputPrice: r.cachedInputPrice?.toString() ?? null,
    markupBps: r.markupBps,
    quantization: r.quantization,
    contextLength: r.contextLength,
    maxOutputTokens: r.maxOutputTokens,
    zeroDataRetention: r.zeroDataRetention,
    supportsTools: r.supportsTools,
    supportsCaching: r.supportsCaching,
    options: r.options as object,
    active: true,
  };
}
