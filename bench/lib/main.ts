/** The entry point of a bench command: run it, exit 0, or print the error and exit 1. */
export function runMain(main: () => Promise<void>): void {
  main().then(
    // Exit explicitly: a worker process or a connection left open must not keep the command alive.
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
