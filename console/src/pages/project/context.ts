import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ProjectWithTables } from '../../api/types.ts';

export interface ProjectCtx {
  project: ProjectWithTables;
  /** reloads the project and its tables (after a table or project change) */
  reload: () => Promise<void>;
  base: string;
}

export const ProjectContext = createContext<ProjectCtx | null>(null);

export function useProject(): ProjectCtx {
  return useContext(ProjectContext)!;
}
