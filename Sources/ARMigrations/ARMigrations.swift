// ARMigrations: automatic schema migration and versioned migrations.
// Until issue 6, ARCore creates missing tables and indexes on first use;
// this target will plug the full migrator into ARCore's hook.
import ARCore
