// A route the app serves, with the contract it declares (what routes.ts reads off the router, and
// what the case generators and hints work from).
import type { Envelope } from '../../activities/surfaces/errors.js';

type Schema = Record<string, any>;

export interface ServedRoute {
  /** as the router has it: `/api/v1/responses/:id` */
  path: string;
  methods: string[];
  envelope: Envelope;
  auth: boolean;
  body?: Schema;
  query?: Schema;
  /** the fields of a multipart form the route reads as it streams (validate.ts declareMultipart) */
  multipart?: Schema;
}
