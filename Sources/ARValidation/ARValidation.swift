// ARValidation: validators, keyed errors and lifecycle callbacks.
// Intentionally empty until issue 5 builds it; no placeholder API is exported.
import ARCore
