/**
 * tsoa's IoC hook: each controller is constructed with the Services of the
 * app that received the request (kept in app.locals), so several apps can run
 * in one process, as they do in tests.
 */
import type { IocContainer, IocContainerFactory } from '@tsoa/runtime';
import type { Request } from 'express';
import type { Services } from './services';

export const iocContainer: IocContainerFactory = (request: unknown): IocContainer => {
  const services = (request as Request).app.locals.services as Services;
  const get = <T>(controller: unknown): T => {
    const Ctor = controller as new (services: Services) => T;
    return new Ctor(services);
  };
  return { get };
};
