import { Controller, Get, NoSecurity, Response, Route, SuccessResponse, Tags } from '@tsoa/runtime';
import type { Problem } from '../http/problem';
import { AppError } from '../http/problem';
import type { Services } from '../services';
import { PROBLEM_JSON } from '../http/problem';
import { badUrlExample, unavailableExample } from './examples/problems';

export interface HealthStatus {
  status: 'ok';
}

export interface ReadinessStatus {
  status: 'ready';
  database: 'up';
  tools: 'loaded';
}

@Route('')
@Tags('Operations')
@NoSecurity()
export class HealthController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * Liveness: 200 while the process runs.
   * @summary Liveness
   */
  @Get('healthz')
  @Response<Problem>(400, 'Malformed URL: bad percent-encoding or a NUL character', badUrlExample, PROBLEM_JSON)
  public healthz(): HealthStatus {
    return { status: 'ok' };
  }

  /**
   * Readiness: 200 when the database answers and the tools are loaded, else 503.
   * @summary Readiness (database and tools)
   */
  @Get('readyz')
  @SuccessResponse(200, 'Ready')
  @Response<Problem>(400, 'Malformed URL: bad percent-encoding or a NUL character', badUrlExample, PROBLEM_JSON)
  @Response<Problem>(503, 'Database unreachable or tools not loaded yet', unavailableExample, PROBLEM_JSON)
  public async readyz(): Promise<ReadinessStatus> {
    if (!this.services.catalog.ready) throw new AppError('unavailable', 'Tools are not loaded yet');
    try {
      await this.services.db.ping();
    } catch {
      throw new AppError('unavailable', 'Database does not answer');
    }
    return { status: 'ready', database: 'up', tools: 'loaded' };
  }
}
