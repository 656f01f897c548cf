// metav1.Status failures with the reasons and messages kube-apiserver uses
// (k8s.io/apimachinery/pkg/api/errors), so clients classify them as they would on k3s.
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
  /** The Status as Go's encoding/json writes metav1.Status: an empty reason, details or detail field is omitted (`omitempty`). */
  toStatus() {
    const details = Object.fromEntries(Object.entries(this.details).filter(([, v]) => v !== '' && v !== undefined));
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      ...(this.reason ? { reason: this.reason } : {}),
      ...(Object.keys(details).length ? { details } : {}),
      code: this.code,
    };
  }

  /** kube-apiserver's ErrorNegotiated: a Status with details.retryAfterSeconds > 0 is sent with a Retry-After header. */
  headers(): Record<string, string> {
    const after = Number(this.details.retryAfterSeconds ?? 0);
    return after > 0 ? { 'retry-after': String(after) } : {};
  }
}

const gr = (group: string, resource: string) => (group ? `${resource}.${group}` : resource);

export const notFound = (group: string, resource: string, name: string) =>
  new ApiError(404, 'NotFound', `${gr(group, resource)} "${name}" not found`, { name, group, kind: resource });
export const alreadyExists = (group: string, resource: string, name: string) =>
  new ApiError(409, 'AlreadyExists', `${gr(group, resource)} "${name}" already exists`, { name, group, kind: resource });
export const conflict = (group: string, resource: string, name: string) =>
  new ApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${gr(group, resource)} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { name, group, kind: resource },
  );
export const badRequest = (msg: string) => new ApiError(400, 'BadRequest', msg);
export const invalid = (kind: string, name: string, msg: string) => new ApiError(422, 'Invalid', `${kind} "${name}" is invalid: ${msg}`, { name, kind });
export const unavailable = (msg: string) => new ApiError(503, 'ServiceUnavailable', msg);
export const timeout = (msg: string) => new ApiError(504, 'Timeout', msg);
