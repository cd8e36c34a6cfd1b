"""Public pages without sign-in, on their own `public` blueprint: the apply form and the answer to a decision."""
