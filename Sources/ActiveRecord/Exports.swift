// The umbrella module: `import ActiveRecord` gives the whole Swift API.
// Re-exports only; no logic lives here.
@_exported import ARCore
@_exported import ARMigrations
@_exported import ARQuery
@_exported import ARSQLite
@_exported import ARRelations
@_exported import ARValidation
