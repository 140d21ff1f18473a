// Compiled only to build the precompiled header (cmake/LatentdPch.cmake).
