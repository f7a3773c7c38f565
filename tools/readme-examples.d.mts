export interface ReadmeExample {
  readonly index: number;
  readonly code: string;
}
export function readmeExamples(packageDir: string, markdownFile?: string): ReadmeExample[];
export function runReadmeExample(packageDir: string, example: ReadmeExample, load: (file: string) => Promise<unknown>): Promise<void>;
