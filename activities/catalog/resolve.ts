// A model name as a caller writes it (`vendor/model:suffix...`) resolved against the catalog: the
// model, its parsed suffixes, and the refusals every route gives (unknown model, wrong category,
// suffixes on a model that reads none). Every surface and job resolves through this one function.
import { RequestError } from '../core/errors.js';
import { type ModelName, parseModelName } from '../routing/suffixes.js';
import { catalog, type ModelInfo } from './catalog.js';

export function resolveModel(requested: string, category = 'chat'): { model: ModelInfo; name: ModelName } {
  const cat = catalog();
  const name = parseModelName(requested, (n) => cat.model(n) !== undefined);
  const model = cat.model(name.base);
  if (!model) {
    const hint = name.base.includes(':')
      ? ` (if '${name.base.slice(name.base.lastIndexOf(':'))}' was meant as a suffix, it is not one)`
      : '';
    throw new RequestError(
      404,
      'model_not_found',
      `Model '${name.base}' does not exist${hint}. GET /api/v1/models lists the models.`,
      { param: 'model' },
    );
  }
  if (model.category !== category) {
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `Model '${model.id}' is not a ${category} model (it is: ${model.category}); it cannot serve this endpoint.`,
      { param: 'model' },
    );
  }
  // Suffixes are read by the text routes only (routing, reasoning and the add-ons); any other
  // model's route would ignore them, and an ignored `:redaction` sends the personal data it was
  // asked to mask. So they are refused there, as `provider.sort` is.
  if (name.suffixes.length && category !== 'chat')
    throw new RequestError(
      400,
      'invalid_parameter_value',
      `Model suffixes ('${name.suffixes.join('')}') apply to text models, and '${model.id}' is not one (its category: ${category}). Remove them from the model name.`,
      { param: 'model' },
    );
  return { model, name };
}
