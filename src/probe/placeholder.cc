// The evidence harness lives here (issue 4); the environment report first.
namespace spore::probe {}
