// What every page reaches: the API client, the router and who is signed in.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { DashboardApi } from './api';
import type { Router } from './router';
import type { DashboardMe } from '../wire';

/** The signed-in person, as `GET <base>/api/me` answers. */
export type Me = DashboardMe;

export interface DashboardContext {
  api: DashboardApi;
  router: Router;
  me: Me | undefined;
  /** After sign-in, or undefined after sign-out: the app re-renders for the new person. */
  setMe: (me: Me | undefined) => void;
}

export const Dashboard = createContext<DashboardContext | undefined>(undefined);

export function useDashboard(): DashboardContext {
  const context = useContext(Dashboard);
  if (context === undefined) throw new Error('useDashboard outside <Dashboard.Provider>');
  return context;
}
