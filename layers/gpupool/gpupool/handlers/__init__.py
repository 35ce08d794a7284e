"""Cloud function handler bodies (Lambda now; Function Compute later), shared by functions/*."""
