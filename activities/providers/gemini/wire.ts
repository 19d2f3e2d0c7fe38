// The Gemini API's own JSON (generativelanguage.googleapis.com, v1beta `generateContent` and
// `streamGenerateContent`), declared once: the adapter writes and reads it, the loopback test
// upstream speaks it. Only the fields Switchyard uses or must recognise are listed.

type GeminiRole = 'user' | 'model';

export interface GeminiFunctionCall {
  /** newer API versions may set it; Gemini 2.x does not */
  id?: string;
  name: string;
  args?: Record<string, unknown>;
}

export interface GeminiPart {
  text?: string;
  /** a thought summary (sent only when `thinkingConfig.includeThoughts` is true) */
  thought?: boolean;
  /** opaque reasoning state the model attaches to some parts; Gemini 3 wants it back on function calls */
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: GeminiFunctionCall;
  functionResponse?: { id?: string; name: string; response: Record<string, unknown> };
}

export interface GeminiContent {
  role?: GeminiRole;
  parts: GeminiPart[];
}

interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  /** full JSON Schema (mutually exclusive with the OpenAPI-subset `parameters`) */
  parametersJsonSchema?: Record<string, unknown>;
  parameters?: Record<string, unknown>;
}

export interface GeminiThinkingConfig {
  /** tokens; 0 turns thinking off, -1 lets the model decide */
  thinkingBudget?: number;
  includeThoughts?: boolean;
}

export interface GeminiGenerationConfig {
  temperature?: number;
  topP?: number;
  topK?: number;
  maxOutputTokens?: number;
  stopSequences?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  responseMimeType?: string;
  responseJsonSchema?: Record<string, unknown>;
  responseSchema?: Record<string, unknown>;
  responseLogprobs?: boolean;
  logprobs?: number;
  candidateCount?: number;
  thinkingConfig?: GeminiThinkingConfig;
}

type GeminiFunctionCallingMode = 'AUTO' | 'ANY' | 'NONE' | 'VALIDATED';

export interface GeminiRequest {
  contents: GeminiContent[];
  systemInstruction?: { parts: Array<{ text: string }> };
  tools?: Array<{ functionDeclarations: GeminiFunctionDeclaration[] }>;
  toolConfig?: { functionCallingConfig: { mode: GeminiFunctionCallingMode; allowedFunctionNames?: string[] } };
  generationConfig?: GeminiGenerationConfig;
}

interface GeminiLogprobCandidate {
  token?: string;
  tokenId?: number;
  logProbability?: number;
}

export interface GeminiCandidate {
  content?: { role?: string; parts?: GeminiPart[] };
  finishReason?: string;
  index?: number;
  logprobsResult?: {
    chosenCandidates?: GeminiLogprobCandidate[];
    topCandidates?: Array<{ candidates?: GeminiLogprobCandidate[] }>;
  };
}

export interface GeminiUsageMetadata {
  promptTokenCount?: number;
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  cachedContentTokenCount?: number;
  /** tokens of tool results the API fed back to the model itself (e.g. search grounding): billed as input */
  toolUsePromptTokenCount?: number;
  totalTokenCount?: number;
}

export interface GeminiResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: { blockReason?: string };
  usageMetadata?: GeminiUsageMetadata;
  modelVersion?: string;
  responseId?: string;
}

/** Google's error envelope (google.rpc.Status), on non-2xx answers and, mid-stream, in a `data:` frame. */
export interface GeminiErrorBody {
  error: {
    code: number;
    message: string;
    status: string;
    details?: Array<Record<string, unknown>>;
  };
}
