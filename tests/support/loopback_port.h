#pragma once

namespace egress {

// A port that was free a moment ago on 127.0.0.1 (for servers that cannot report a port they
// picked; another process may take it before the server binds it). 0 when none was found.
int FreeLoopbackPort();

// True when something accepts a TCP connection on 127.0.0.1:port now.
bool LoopbackAccepts(int port);

}  // namespace egress
