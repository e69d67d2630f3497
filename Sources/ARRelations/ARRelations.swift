// ARRelations: belongs-to, has-many, has-many-through, dependencies, eager loading.
// Intentionally empty until issue 4 builds it; no placeholder API is exported.
import ARCore
import ARQuery
