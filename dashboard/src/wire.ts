// What the dashboard's routes answer, in one place for both sides: the control plane's routes
// (control-plane/src/http/dashboard/) build these shapes, the app (src/app/) reads them. Types
// only: the browser bundle takes nothing else from here.

/** The signed-in person: `GET <base>/api/me`, `POST …/sign-in`, `POST …/set-password`. */
export interface DashboardMe {
  userId: string;
  email: string;
}

/** A project's access as the dashboard shows it: `owner` for the person's own projects, else their membership. */
export type DashboardAccess = 'owner' | 'FULL' | 'READONLY';

/** A project as `GET <base>/api/projects` lists it. */
export interface DashboardProject {
  projectId: string;
  name: string;
  region: string;
  access: DashboardAccess;
  enabled: boolean;
  subscriptionStatus: string;
  liveUploadId: string | null;
  liveUser: number;
  queueUser: number;
  shareUrl: string;
}
