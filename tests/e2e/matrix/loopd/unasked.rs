//! Unasked messages reach the room: a reminder with nobody on the socket.
