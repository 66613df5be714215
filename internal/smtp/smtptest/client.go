package smtptest

import netsmtp "net/smtp"

// Deliver sends data from from to rcpts at addr over SMTP as a plain
// client does (net/smtp, which turns LF into CRLF), one message: the first
// refusal or failure, or nil.
func Deliver(addr, from string, rcpts []string, data []byte) error {
	c, err := netsmtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Hello("client.example"); err != nil {
		return err
	}
	if err := c.Mail(from); err != nil {
		return err
	}
	for _, r := range rcpts {
		if err := c.Rcpt(r); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}
