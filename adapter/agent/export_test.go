package agent

// SparesAtHand returns how many of the agent's spare connections the client holds.
func SparesAtHand(c *Client) int {
	c.dmu.Lock()
	d := c.direct
	c.dmu.Unlock()
	if d == nil {
		return 0
	}
	return len(d.spares)
}

// DirectToken returns the token of the client's direct streams (nil before they are set up).
func DirectToken(c *Client) []byte {
	c.dmu.Lock()
	d := c.direct
	c.dmu.Unlock()
	if d == nil {
		return nil
	}
	return d.token
}
